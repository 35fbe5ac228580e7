// The CUDA driver API, loaded at run time (dlopen "libcuda.so.1"), behind a small RAII layer.
// Nothing here links libcuda or cudart: a machine without the driver gets a clear "no CUDA
// driver" from Driver::get() and 0 devices. No cuda.h types appear in this header, so users
// compile without the toolkit's headers; handles are opaque and device pointers are uint64.
// Every failing call throws gpu::Error naming the call, its arguments and the CUDA error.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/exit_code.h"

namespace tqref::gpu {

// Ends a command with kExitGpuFault when `fault`, else kExitNoDevice (io/exit_code.h: the CLI
// catches the base, so it needs no CUDA build to name this type).
struct Error : ExitCodeError {
  Error(const std::string& what, int code, bool fault)
      : Error(fault ? kExitGpuFault : kExitNoDevice, what, code, fault) {}
  int code;    // CUresult; -1 for errors raised by this layer
  bool fault;  // a kernel trapped, hit an illegal address or timed out: the context is unusable

 protected:
  Error(ExitCode exit, const std::string& what, int code, bool fault)
      : ExitCodeError(exit, what), code(code), fault(fault) {}
};

struct DeviceInfo {
  int ordinal = 0;
  std::string name;            // "NVIDIA H200"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  uint64_t total_memory = 0;   // bytes
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

struct DriverApi;  // the dlsym'd function table (driver.cpp)

// The loaded driver, one per process (never unloaded).
class Driver {
 public:
  // The driver, or nullptr with `why` set ("no CUDA driver: libcuda.so.1: cannot open ...").
  static const Driver* get(std::string* why = nullptr);
  // Like get(), but throws gpu::Error with the reason.
  static const Driver& require();

  int api_version() const { return api_version_; }        // cuDriverGetVersion, e.g. 13000
  std::string api_version_string() const;                  // "13.0"
  static std::string kernel_module_version();              // "580.159.04" from /proc, or ""
  // The version in a /proc/driver/nvidia/version line, both the proprietary module's
  // ("... x86_64 Kernel Module  580.159.04  <date>") and the open module's ("... Open Kernel
  // Module for x86_64  580.159.04  Release Build ..."): the first token after "Kernel Module"
  // made of digits and dots; "" when there is none.
  static std::string parse_kernel_module_version(const std::string& proc_line);
  int device_count() const { return device_count_; }
  DeviceInfo device(int ordinal) const;

  ~Driver();
  const DriverApi& api() const { return *api_; }
  // Throws gpu::Error "<call>: CUDA_ERROR_X (description)" when r != CUDA_SUCCESS.
  void check(int r, const std::string& call) const;

 private:
  Driver() = default;
  std::unique_ptr<DriverApi> api_;
  int api_version_ = 0, device_count_ = 0;
};

// The device's primary context, retained and made current on the calling thread.
class Context {
 public:
  explicit Context(int ordinal = 0);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  const DeviceInfo& device() const { return info_; }
  void make_current() const;
  void synchronize() const;  // cuCtxSynchronize: surfaces asynchronous kernel faults
  uint64_t free_memory() const;
  // After a sticky fault (trap, illegal address): cuDevicePrimaryCtxReset destroys every
  // allocation, module and stream of the primary context, which is then retained afresh and made
  // current. Every Module, Stream and DeviceBuffer of the old context must be gone (or released)
  // before: their handles are dead. Throws gpu::Error when the device cannot be used again.
  void reset();
  // Gives up the context without releasing it: after a launch timeout the kernel may still run,
  // and tearing the context down could wait for it. The process then exits without CUDA teardown.
  void abandon() { ctx_ = nullptr; }

 private:
  const Driver& drv_;
  DeviceInfo info_;
  int dev_ = 0;
  void* ctx_ = nullptr;
};

class Stream {
 public:
  Stream();  // non-blocking stream in the current context
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void synchronize() const;
  // cuStreamQuery: 0 when all queued work is complete, CUDA_ERROR_NOT_READY (600) while it runs,
  // otherwise the CUresult of a failure (not thrown: the launch watchdog classifies it).
  int query() const;
  void* handle() const { return s_; }
  // Forgets the stream without destroying it (a kernel that outlived the watchdog still runs on it).
  void release() { s_ = nullptr; }

 private:
  void* s_ = nullptr;
};

class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream* s = nullptr);
  void synchronize() const;
  float elapsed_ms_since(const Event& start) const;  // both recorded and complete

 private:
  void* e_ = nullptr;
};

// Device memory (cuMemAlloc); transfers are synchronous unless a stream is given.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; o.bytes_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  uint64_t ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* src, size_t bytes, size_t offset = 0);
  void download(void* dst, size_t bytes, size_t offset = 0) const;
  void fill(uint8_t value, size_t bytes, size_t offset = 0);  // cuMemsetD8
  // Forgets the allocation without cuMemFree, which waits for running kernels: used when a kernel
  // that may use the buffer outlived the launch watchdog.
  void release() { ptr_ = 0; bytes_ = 0; }

 private:
  void range_check(const char* what, size_t bytes, size_t offset) const;
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
};

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

class Module;

class Function {
 public:
  // params: one pointer per kernel parameter, in declaration order (cuLaunchKernel's kernelParams).
  void launch(Dim3 grid, Dim3 block, void** params, size_t shared_bytes = 0,
              const Stream* stream = nullptr) const;
  const std::string& name() const { return name_; }

 private:
  friend class Module;
  Function(void* f, std::string name) : f_(f), name_(std::move(name)) {}
  void* f_;
  std::string name_;
};

// A loaded module: cubin, fatbin or PTX (JIT-compiled; its error log goes into the exception).
class Module {
 public:
  static Module from_file(const std::string& path);
  static Module from_image(std::span<const unsigned char> image, const std::string& label);
  ~Module();
  Module(Module&& o) noexcept : m_(o.m_), label_(std::move(o.label_)) { o.m_ = nullptr; }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  // Throws gpu::Error naming the module and the kernel (and the kernels it has, where the driver
  // can list them) when `name` is not an entry point of the module.
  Function function(const std::string& name) const;
  std::vector<std::string> function_names() const;  // empty where the driver cannot enumerate
  const std::string& label() const { return label_; }
  // Forgets the module without cuModuleUnload (its context was reset or abandoned).
  void release() { m_ = nullptr; }

 private:
  Module(void* m, std::string label) : m_(m), label_(std::move(label)) {}
  void* m_ = nullptr;
  std::string label_;
};

}  // namespace tqref::gpu
