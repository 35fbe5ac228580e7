// The seam between "run the kernel somehow" and "judge the bytes": a Backend launches one golden
// case (the CPU model here, the GPU in harness/gpu/) and returns every buffer the launch may write,
// each wrapped in guard bands. Comparison and reporting (compare.h, report.h) never look at which
// backend produced the bytes.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/exit_code.h"
#include "io/golden_case.h"
#include "tqref/format.h"

namespace tqref::judge {

// Bytes before and after each device buffer. A backend fills them with guard_byte(i) before the
// launch and returns them as found afterwards; any change is an out-of-bounds write. 4 KiB: an
// off-by-one-row or off-by-one-group write of any SPEC geometry up to head_dim 256 x 8 heads
// lands inside the band; a multiple of 256 keeps the data start as aligned as cuMemAlloc's.
inline constexpr uint64_t kGuardBytes = 4096;
// Guard pattern byte i of a band (i counts from the start of the band). Not constant, so a shifted
// copy of the band is also caught.
inline uint8_t guard_byte(uint64_t i) { return uint8_t(0xA5u ^ (i * 0x3Bu)); }

// One output buffer as the backend left it: [kGuardBytes guard][size data][kGuardBytes guard].
struct GuardedBuffer {
  std::vector<uint8_t> bytes;
  uint64_t size() const { return bytes.size() - 2 * kGuardBytes; }
  uint8_t* data() { return bytes.data() + kGuardBytes; }
  const uint8_t* data() const { return bytes.data() + kGuardBytes; }
  // A buffer holding `init` between freshly written guard bands.
  static GuardedBuffer with_guards(std::span<const uint8_t> init);
};

// What a backend produced for one case. Writer cases: "k_cache", "v_cache"; decode: "output".
struct CaseResult {
  std::map<std::string, GuardedBuffer> buffers;
  // Input buffers as found after the launch (GPU backend; input_buffers() in launch_buffers.h
  // names them): compare_case checks that neither the data nor the guards changed.
  std::map<std::string, GuardedBuffer> inputs;
  std::string error;  // non-empty: the launch failed (fault, bad parameters); no buffers
};

// same_as_file: decode results follow the file's EX2 profile (the CPU model; a GPU whose
// architecture's profile has the file's id). Otherwise `profile` is the unit's own profile, or
// null when none is known for it; `why` says which and why, for the report.
struct Ex2Source {
  bool same_as_file = true;
  const Ex2Profile* profile = nullptr;
  std::string why;
};

// Where a backend's launches spent their time, summed over every run() (wall seconds of the
// calling thread): putting each case's buffers on the device (allocation, guard bands, copies),
// the kernel (launch to completion as the host sees it), taking them back (copies, frees).
// What a conform run costs beyond its GPU work is the rest (docs/performance.md).
struct LaunchTimes {
  uint64_t launches = 0;
  double upload_s = 0, kernel_s = 0, download_s = 0;
  LaunchTimes& operator+=(const LaunchTimes& o);
};

struct Backend {
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual CaseResult run(const golden::GoldenCase& c) = 0;
  // "" when this backend can launch case c; otherwise why not (its module lacks the kernel, or
  // was built for another HDIM or THRESH). `tqref check` reports such cases as skipped.
  virtual std::string cannot_run(const golden::GoldenCase&) const { return ""; }
  // The EX2 unit this backend's decode results follow (ex2_expectation.h decides how a decode
  // case is judged from it). The default: the profile the file was generated with.
  virtual Ex2Source decode_ex2() const { return {}; }
  // One line about what runs the cases ("GPU 0: NVIDIA H200 ..."), printed when it opens; "" none.
  virtual std::string description() const { return ""; }
  // Cases whose launch faulted the device, in order, and the one after which nothing more was
  // launched ("" when the backend recovered and went on); always empty for the model.
  virtual std::vector<std::string> faulted_cases() const { return {}; }
  virtual std::string fault_case() const { return ""; }
  // True when the backend gave up on its device context (a launch that never finished): the
  // process must then exit without tearing the context down.
  virtual bool abandoned() const { return false; }
  // The device backends' launch times; zero for the model (its work is the CPU's).
  virtual LaunchTimes launch_times() const { return {}; }
};

// The CPU model (tqref_model) as a backend. `ex2` is needed for decode cases.
std::unique_ptr<Backend> make_model_backend(const Ex2Profile* ex2);

// What the command line gives a backend; the model uses none of it.
struct BackendOptions {
  int device = 0;               // GPU ordinal
  std::string module;           // a kernel module file instead of the built-in fatbins ("" = built-in)
  uint32_t hdim = 0;            // with module: the HDIM its decoders were built with (0 = none given)
  float threshold = kSparseVThreshold;  // with module: its TQ_PLUS_SPARSE_V_THRESHOLD
  double launch_timeout = 60.0; // seconds one launch may run before it is reported as hung
  std::string variant;          // decoders: "" the reference order, or a built-in variant decoder
};

// A backend that cannot be opened (no usable device, a module that cannot be loaded): the
// message names what, `code` is the exit code (io/exit_code.h) the command ends with.
struct BackendError : std::runtime_error {
  BackendError(ExitCode c, const std::string& what) : std::runtime_error(what), code(c) {}
  ExitCode code;
};

// Backends by name for `tqref check --backend NAME`. "model" is always there; the GPU backend
// registers itself from harness/gpu/gpu_backend_registration.cpp, which CMake links into the CLI
// exactly when CUDA is built. A factory throws BackendError when its backend cannot be opened.
using BackendFactory = std::unique_ptr<Backend> (*)(const BackendOptions& o, const Ex2Profile* ex2);
bool register_backend(const std::string& name, BackendFactory f);
// null: no backend of that name.
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& o,
                                      const Ex2Profile* ex2);
std::vector<std::string> backend_names();

// Buffer names of a case kind, in the order they are reported.
std::vector<std::string> output_buffers(golden::CaseKind k);

}  // namespace tqref::judge
