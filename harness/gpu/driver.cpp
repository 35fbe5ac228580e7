#include "gpu/driver.h"

#include <cctype>
#include <cuda.h>
#include <dlfcn.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace tqref::gpu {

// Entry points, by their cuda.h names. Several are macros for versioned symbols (cuMemAlloc ->
// cuMemAlloc_v2); TQREF_SYM stringises after expansion, so dlsym asks for the symbol the header
// declares and decltype gives its exact signature.
#define TQREF_REQUIRED_CALLS(X)                                                                   \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount)       \
  X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDeviceTotalMem)                   \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxReset)            \
  X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree)             \
  X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemsetD8) X(cuModuleLoadDataEx) X(cuModuleUnload)        \
  X(cuModuleGetFunction)                                                                        \
  X(cuLaunchKernel) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate)  \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuStreamQuery)
// Newer entry points (CUDA 12.3/12.4) used only to list a module's kernels in error messages.
#define TQREF_OPTIONAL_CALLS(X) X(cuModuleGetFunctionCount) X(cuModuleEnumerateFunctions) X(cuFuncGetName)
#define TQREF_SYM2(x) #x
#define TQREF_SYM(x) TQREF_SYM2(x)

struct DriverApi {
#define TQREF_MEMBER(fn) decltype(&::fn) fn = nullptr;
  TQREF_REQUIRED_CALLS(TQREF_MEMBER)
  TQREF_OPTIONAL_CALLS(TQREF_MEMBER)
#undef TQREF_MEMBER
};

namespace {

// Errors after which the context cannot be used again (a sticky fault of a kernel).
bool is_fault(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
      return true;
    default:
      return false;
  }
}

struct Loaded {
  std::unique_ptr<Driver> driver;
  std::string why;
};

}  // namespace

Driver::~Driver() = default;

std::string Driver::api_version_string() const {
  return std::to_string(api_version_ / 1000) + "." + std::to_string(api_version_ % 1000 / 10);
}

std::string Driver::parse_kernel_module_version(const std::string& proc_line) {
  const std::string key = "Kernel Module";
  const auto at = proc_line.find(key);
  if (at == std::string::npos) return "";
  std::istringstream rest(proc_line.substr(at + key.size()));
  for (std::string v; rest >> v;) {
    const bool digits_and_dots = v.find_first_not_of("0123456789.") == std::string::npos;
    if (digits_and_dots && std::isdigit(static_cast<unsigned char>(v.front())) &&
        v.find('.') != std::string::npos)
      return v;
  }
  return "";
}

std::string Driver::kernel_module_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (f && std::getline(f, line)) {
    if (std::string v = parse_kernel_module_version(line); !v.empty()) return v;
  }
  // Containers may hide /proc/driver: ask NVML (also loaded at run time, never linked).
  void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!nvml) return "";
  using InitFn = int (*)();
  using VersionFn = int (*)(char*, unsigned);
  auto init = reinterpret_cast<InitFn>(::dlsym(nvml, "nvmlInit_v2"));
  auto version = reinterpret_cast<VersionFn>(::dlsym(nvml, "nvmlSystemGetDriverVersion"));
  auto shutdown = reinterpret_cast<InitFn>(::dlsym(nvml, "nvmlShutdown"));
  char v[96] = {};
  const bool ok = init && version && shutdown && init() == 0 && version(v, sizeof v - 1) == 0;
  if (init && shutdown && ok) shutdown();
  ::dlclose(nvml);
  return ok ? v : "";
}

void Driver::check(int r, const std::string& call) const {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  api_->cuGetErrorName(CUresult(r), &name);
  api_->cuGetErrorString(CUresult(r), &text);
  throw Error(call + ": " + (name ? name : "CUDA error " + std::to_string(r)) + " (" +
                  (text ? text : "no description") + ")",
              r, is_fault(CUresult(r)));
}

const Driver* Driver::get(std::string* why) {
  static const Loaded loaded = [] {
    Loaded l;
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = ::dlerror();
      l.why = std::string("no CUDA driver: ") + (e ? e : "dlopen(libcuda.so.1) failed");
      return l;
    }
    auto api = std::make_unique<DriverApi>();
    std::string missing;
#define TQREF_LOAD(fn)                                                              \
  api->fn = reinterpret_cast<decltype(api->fn)>(::dlsym(lib, TQREF_SYM(fn)));       \
  if (!api->fn) missing += std::string(missing.empty() ? "" : ", ") + TQREF_SYM(fn);
    TQREF_REQUIRED_CALLS(TQREF_LOAD)
#undef TQREF_LOAD
    if (!missing.empty()) {
      l.why = "CUDA driver too old: libcuda.so.1 lacks " + missing;
      return l;
    }
#define TQREF_LOAD_OPTIONAL(fn) \
  api->fn = reinterpret_cast<decltype(api->fn)>(::dlsym(lib, TQREF_SYM(fn)));
    TQREF_OPTIONAL_CALLS(TQREF_LOAD_OPTIONAL)
#undef TQREF_LOAD_OPTIONAL
    std::unique_ptr<Driver> d(new Driver());
    d->api_ = std::move(api);
    CUresult r = d->api_->cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE) {  // driver present, no GPU: 0 devices, still usable
      l.driver = std::move(d);
      return l;
    }
    try {
      d->check(r, "cuInit(0)");
      d->check(d->api_->cuDriverGetVersion(&d->api_version_), "cuDriverGetVersion");
      d->check(d->api_->cuDeviceGetCount(&d->device_count_), "cuDeviceGetCount");
    } catch (const Error& e) {
      l.why = std::string("CUDA driver unusable: ") + e.what();
      return l;
    }
    l.driver = std::move(d);
    return l;
  }();
  if (why) *why = loaded.why;
  return loaded.driver.get();
}

const Driver& Driver::require() {
  std::string why;
  const Driver* d = get(&why);
  if (!d) throw Error(why, -1, false);
  if (d->device_count() == 0) throw Error("CUDA driver loaded, but it reports 0 devices", -1, false);
  return *d;
}

DeviceInfo Driver::device(int ordinal) const {
  if (ordinal < 0 || ordinal >= device_count_)
    throw Error("device " + std::to_string(ordinal) + " does not exist (" +
                    std::to_string(device_count_) + " devices)", -1, false);
  CUdevice dev;
  const std::string at = "(device " + std::to_string(ordinal) + ")";
  check(api_->cuDeviceGet(&dev, ordinal), "cuDeviceGet" + at);
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  check(api_->cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName" + at);
  info.name = name;
  check(api_->cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)" + at);
  check(api_->cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)" + at);
  check(api_->cuDeviceGetAttribute(&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
        "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)" + at);
  size_t mem = 0;
  check(api_->cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem" + at);
  info.total_memory = mem;
  return info;
}

// ---- Context -------------------------------------------------------------------------------

Context::Context(int ordinal) : drv_(Driver::require()), info_(drv_.device(ordinal)) {
  CUdevice dev;
  drv_.check(drv_.api().cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  dev_ = dev;
  CUcontext c = nullptr;
  drv_.check(drv_.api().cuDevicePrimaryCtxRetain(&c, dev),
             "cuDevicePrimaryCtxRetain(device " + std::to_string(ordinal) + ")");
  ctx_ = c;
  make_current();
}

Context::~Context() {
  if (ctx_) drv_.api().cuDevicePrimaryCtxRelease(CUdevice(dev_));
}

void Context::reset() {
  const std::string at = "(device " + std::to_string(info_.ordinal) + ")";
  if (ctx_) drv_.api().cuDevicePrimaryCtxRelease(CUdevice(dev_));  // the faulted context's error is moot
  ctx_ = nullptr;
  drv_.check(drv_.api().cuDevicePrimaryCtxReset(CUdevice(dev_)), "cuDevicePrimaryCtxReset" + at);
  CUcontext c = nullptr;
  drv_.check(drv_.api().cuDevicePrimaryCtxRetain(&c, CUdevice(dev_)), "cuDevicePrimaryCtxRetain" + at);
  ctx_ = c;
  make_current();
}

void Context::make_current() const {
  drv_.check(drv_.api().cuCtxSetCurrent(static_cast<CUcontext>(ctx_)), "cuCtxSetCurrent");
}

void Context::synchronize() const { drv_.check(drv_.api().cuCtxSynchronize(), "cuCtxSynchronize"); }

uint64_t Context::free_memory() const {
  size_t free = 0, total = 0;
  drv_.check(drv_.api().cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return free;
}

// ---- Stream, Event -------------------------------------------------------------------------

Stream::Stream() {
  const Driver& d = Driver::require();
  CUstream s = nullptr;
  d.check(d.api().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  s_ = s;
}

Stream::~Stream() {
  if (s_) Driver::get()->api().cuStreamDestroy(static_cast<CUstream>(s_));
}

void Stream::synchronize() const {
  const Driver& d = Driver::require();
  d.check(d.api().cuStreamSynchronize(static_cast<CUstream>(s_)), "cuStreamSynchronize");
}

int Stream::query() const {
  return Driver::require().api().cuStreamQuery(static_cast<CUstream>(s_));
}

Event::Event() {
  const Driver& d = Driver::require();
  CUevent e = nullptr;
  d.check(d.api().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  e_ = e;
}

Event::~Event() {
  if (e_) Driver::get()->api().cuEventDestroy(static_cast<CUevent>(e_));
}

void Event::record(const Stream* s) {
  const Driver& d = Driver::require();
  d.check(d.api().cuEventRecord(static_cast<CUevent>(e_), s ? static_cast<CUstream>(s->handle()) : nullptr),
          "cuEventRecord");
}

void Event::synchronize() const {
  const Driver& d = Driver::require();
  d.check(d.api().cuEventSynchronize(static_cast<CUevent>(e_)), "cuEventSynchronize");
}

float Event::elapsed_ms_since(const Event& start) const {
  const Driver& d = Driver::require();
  float ms = 0;
  d.check(d.api().cuEventElapsedTime(&ms, static_cast<CUevent>(start.e_), static_cast<CUevent>(e_)),
          "cuEventElapsedTime");
  return ms;
}

// ---- DeviceBuffer --------------------------------------------------------------------------

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  const Driver& d = Driver::require();
  CUdeviceptr p = 0;
  d.check(d.api().cuMemAlloc(&p, bytes == 0 ? 1 : bytes),
          "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) Driver::get()->api().cuMemFree(CUdeviceptr(ptr_));
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) Driver::get()->api().cuMemFree(CUdeviceptr(ptr_));
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = 0;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::range_check(const char* what, size_t bytes, size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error(std::string(what) + ": bytes [" + std::to_string(offset) + ", " +
                    std::to_string(offset + bytes) + ") outside the buffer of " +
                    std::to_string(bytes_) + " bytes", -1, false);
}

void DeviceBuffer::upload(const void* src, size_t bytes, size_t offset) {
  range_check("upload", bytes, offset);
  const Driver& d = Driver::require();
  d.check(d.api().cuMemcpyHtoD(CUdeviceptr(ptr_ + offset), src, bytes),
          "cuMemcpyHtoD(" + std::to_string(bytes) + " bytes)");
}

void DeviceBuffer::download(void* dst, size_t bytes, size_t offset) const {
  range_check("download", bytes, offset);
  const Driver& d = Driver::require();
  d.check(d.api().cuMemcpyDtoH(dst, CUdeviceptr(ptr_ + offset), bytes),
          "cuMemcpyDtoH(" + std::to_string(bytes) + " bytes)");
}

void DeviceBuffer::fill(uint8_t value, size_t bytes, size_t offset) {
  range_check("fill", bytes, offset);
  const Driver& d = Driver::require();
  d.check(d.api().cuMemsetD8(CUdeviceptr(ptr_ + offset), value, bytes),
          "cuMemsetD8(" + std::to_string(bytes) + " bytes)");
}

// ---- Module, Function ----------------------------------------------------------------------

Module Module::from_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open module file", -1, false);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw Error(path + ": module file is empty", -1, false);
  bytes.push_back(0);  // PTX is text and must be NUL-terminated; cubin/fatbin ignore the tail
  return from_image(bytes, path);
}

Module Module::from_image(std::span<const unsigned char> image, const std::string& label) {
  const Driver& d = Driver::require();
  // The JIT's error log (PTX input) goes into the exception text.
  char log[8192] = {};
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {log, reinterpret_cast<void*>(uintptr_t(sizeof log - 1))};
  CUmodule m = nullptr;
  CUresult r = d.api().cuModuleLoadDataEx(&m, image.data(), 2, opts, vals);
  if (r != CUDA_SUCCESS) {
    try {
      d.check(r, "cuModuleLoadDataEx(" + label + ", " + std::to_string(image.size()) + " bytes)");
    } catch (Error& e) {
      if (log[0] == 0) throw;
      throw Error(std::string(e.what()) + "\nJIT log:\n" + log, e.code, false);
    }
  }
  return Module(m, label);
}

Module::~Module() {
  if (m_) Driver::get()->api().cuModuleUnload(static_cast<CUmodule>(m_));
}

std::vector<std::string> Module::function_names() const {
  const DriverApi& a = Driver::require().api();
  std::vector<std::string> names;
  if (!a.cuModuleGetFunctionCount || !a.cuModuleEnumerateFunctions || !a.cuFuncGetName) return names;
  unsigned n = 0;
  if (a.cuModuleGetFunctionCount(&n, static_cast<CUmodule>(m_)) != CUDA_SUCCESS) return names;
  std::vector<CUfunction> fs(n);
  if (a.cuModuleEnumerateFunctions(fs.data(), n, static_cast<CUmodule>(m_)) != CUDA_SUCCESS) return names;
  for (CUfunction f : fs) {
    const char* s = nullptr;
    if (a.cuFuncGetName(&s, f) == CUDA_SUCCESS && s) names.emplace_back(s);
  }
  return names;
}

Function Module::function(const std::string& name) const {
  const Driver& d = Driver::require();
  CUfunction f = nullptr;
  CUresult r = d.api().cuModuleGetFunction(&f, static_cast<CUmodule>(m_), name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    std::string have;
    for (const auto& n : function_names()) have += (have.empty() ? "" : ", ") + n;
    throw Error("module " + label_ + " has no kernel '" + name + "'" +
                    (have.empty() ? "" : " (it has: " + have + ")"), r, false);
  }
  d.check(r, "cuModuleGetFunction(" + label_ + ", " + name + ")");
  return Function(f, name);
}

void Function::launch(Dim3 grid, Dim3 block, void** params, size_t shared_bytes,
                      const Stream* stream) const {
  const Driver& d = Driver::require();
  d.check(d.api().cuLaunchKernel(static_cast<CUfunction>(f_), grid.x, grid.y, grid.z, block.x,
                                 block.y, block.z, unsigned(shared_bytes),
                                 stream ? static_cast<CUstream>(stream->handle()) : nullptr, params,
                                 nullptr),
          "cuLaunchKernel(" + name_ + ", grid " + std::to_string(grid.x) + "x" +
              std::to_string(grid.y) + "x" + std::to_string(grid.z) + ", block " +
              std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
              std::to_string(block.z) + ")");
}

}  // namespace tqref::gpu
