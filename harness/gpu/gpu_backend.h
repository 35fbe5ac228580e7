// The GPU as a golden Backend (harness/judge/backend.h): for each case, every buffer of the
// launch goes to the device between kGuardBytes guard bands (guard_byte pattern), the kernel
// named by the case is launched ONCE with SPEC's argument order (launch.h), grid and block
// (writer [num_tokens] x [256]; decoder [num_q_heads, num_seqs] x [256]), the context is
// synchronised, and every byte including the guards comes back: outputs in CaseResult::buffers
// (judged at level W/D/T by harness/judge), inputs in CaseResult::inputs (must be unchanged).
//
// Modules: the built-in fatbins (kernels/builtin: tqref/builtin_kernels.h; the decoder build is
// picked by the case's HDIM) or one external module file (cubin, PTX or fatbin) whose HDIM and
// THRESH the caller states, or the GQA decoders (GpuOptions::gqa_decoders).
// Cases the module cannot run (kernel missing, other HDIM or THRESH)
// are reported by cannot_run(), not launched. Every CUDA call is checked; errors name the call
// and the case. After a sticky fault (illegal address, trap) the context is unusable: with
// reset_after_fault the primary context is reset, the modules reloaded and the next case runs in
// the fresh context; otherwise (or when the reset fails) later cases are not launched and say so.
// After a watchdog timeout the kernel may still run: the context is abandoned (no reset, no
// cuMemFree/cuModuleUnload/context release, which could wait for it; gpu/launch_fault_policy.h)
// and the caller should leave with _exit once its reports are written (abandoned()).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/driver.h"
#include "gpu/watchdog.h"
#include "judge/backend.h"
#include "tqref/ex2.h"
#include "tqref/format.h"

namespace tqref::gpu {

// The external module cannot be loaded or does not fit: the command exits kExitBadInput.
struct ModuleError : Error {
  ModuleError(const std::string& what, int code, bool fault) : Error(kExitBadInput, what, code, fault) {}
};

struct GpuOptions {
  int device = 0;
  std::string module_path;               // "" = the built-in fatbins
  uint32_t hdim = 0;                     // external module: its decoders' HDIM (0 = not stated)
  float threshold = kSparseVThreshold;   // external module: its TQ_PLUS_SPARSE_V_THRESHOLD
  double launch_timeout_s = kDefaultLaunchTimeoutS;  // watchdog deadline of one launch (watchdog.h)
  bool reset_after_fault = false;        // sticky fault: reset the context and go on (see above)
  // Decoders: false the reference-order kernels; true the built-in GQA modules (decode_gqa_hdim<H>,
  // entry points <name>_gqa, same bits as the reference order) launched on grid
  // [num_q_heads / HT, num_seqs] with HT = gqa::widest_heads_per_cta, 8 down to 1
  // (docs/gqa-decoders.md). Not with module_path.
  bool gqa_decoders = false;
  // This GPU's EX2 profile when the caller holds it already (tqref conform loads it once per run,
  // not once per module and suite: 0.15 s each on the development VM); null: the backend loads the
  // profile of the device's architecture (load_ex2_profile_for_arch).
  const Ex2Profile* device_ex2 = nullptr;
};

class GpuBackend : public judge::Backend {
 public:
  // Throws gpu::Error when there is no driver or device, ModuleError when the external module
  // cannot be loaded on this GPU (the message names the module, the GPU's architecture and what
  // would load) or --hdim is not 128/256.
  GpuBackend(const GpuOptions& o, const Ex2Profile* file_ex2);
  ~GpuBackend() override;

  std::string name() const override;
  judge::CaseResult run(const golden::GoldenCase& c) override;
  std::string cannot_run(const golden::GoldenCase& c) const override;
  judge::Ex2Source decode_ex2() const override { return ex2_source_; }

  const DeviceInfo& device() const { return ctx_.device(); }
  // The case after whose fault nothing more is launched ("" = none; a fault followed by a
  // successful reset does not set it).
  std::string fault_case() const override { return fault_case_; }
  // Every case whose launch faulted or timed out, in order: `tqref check` exits kExitGpuFault.
  std::vector<std::string> faulted_cases() const override { return faulted_cases_; }
  // A kernel outlived the watchdog and may still run: exit with _exit, without CUDA teardown.
  bool abandoned() const override { return abandoned_; }
  std::string description() const override;
  judge::LaunchTimes launch_times() const override { return times_; }

 private:
  const Module& module_for(const golden::GoldenCase& c) const;
  // The kernel of case c, or nullptr with *why set when the module lacks it.
  const Function* kernel_for(const golden::GoldenCase& c, std::string* why) const;
  void launch_case(const golden::GoldenCase& c, judge::CaseResult& r);
  // Applies common::after_launch_error to a fault of case `name`; notes on `error` what followed.
  void after_fault(const std::string& name, std::string& error);
  // Drops every module and kernel of the faulted context, resets it, checks that the device
  // works again and reloads the external module. Throws gpu::Error when any step fails.
  void reset_context();
  // Forgets every module without unloading it (the context is abandoned).
  void release_modules();

  GpuOptions opt_;
  Context ctx_;
  std::optional<Module> external_;
  mutable std::map<std::string, Module> builtin_;      // module name -> loaded fatbin
  mutable std::map<std::string, std::optional<Function>> kernels_;  // "<module>/<kernel>"
  mutable std::map<std::string, std::string> missing_; // same key -> why the kernel is absent
  std::optional<Ex2Profile> device_ex2_;
  judge::Ex2Source ex2_source_;
  std::string fault_case_;
  std::string not_launched_;  // error of the cases after fault_case_
  std::vector<std::string> faulted_cases_;
  bool abandoned_ = false;
  judge::LaunchTimes times_;
};

// One line for logs: "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB), CUDA driver API 13.0, kernel module 580.x".
std::string describe_device(const DeviceInfo& d);

}  // namespace tqref::gpu
