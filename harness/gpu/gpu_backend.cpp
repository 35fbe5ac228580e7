#include "gpu/gpu_backend.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "gpu/device_buffers.h"
#include "gpu/launch.h"
#include "gpu/launch_fault_policy.h"
#include "io/case_checks.h"
#include "io/ex2_profile_io.h"
#include "judge/launch_buffers.h"
#include "kernels/gqa/gqa_decode_core.h"
#include "tqref/builtin_kernels.h"
#include "tqref/contract.h"

namespace tqref::gpu {

using golden::CaseKind;
using judge::CaseResult;
using golden::GoldenCase;
using judge::GuardedBuffer;
using judge::kGuardBytes;

namespace {

std::string fmt_float(float f) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", double(f));
  return b;
}

// Which EX2 unit the GPU's decode results follow, compared with the file's profile.
judge::Ex2Source make_ex2_source(const std::string& arch, const Ex2Profile* file_ex2,
                                 const std::optional<Ex2Profile>& dev, const std::string& load_error) {
  judge::Ex2Source s;
  if (dev && (!file_ex2 || dev->id() == file_ex2->id())) return s;  // judged against the file
  s.same_as_file = false;
  if (dev) {
    s.profile = &*dev;
    s.why = "this GPU (" + arch + ") has EX2 profile " + dev->id() + ", the file was generated with " +
            file_ex2->id() + ": decode expectations are recomputed by the model with " + dev->id();
  } else {
    s.why = "no EX2 profile for " + arch + " (" + load_error + "): decode outputs cannot be judged "
            "bit for bit; measure one with `tqref calibrate ex2` on this GPU, or use --level T";
  }
  return s;
}

}  // namespace

std::string describe_device(const DeviceInfo& d) {
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB", double(d.total_memory) / double(1ull << 30));
  const Driver& drv = Driver::require();
  const std::string km = Driver::kernel_module_version();
  return d.name + " (" + d.arch() + ", " + std::to_string(d.sm_count) + " SMs, " + mem +
         "), CUDA driver API " + drv.api_version_string() +
         (km.empty() ? "" : ", kernel module " + km);
}

GpuBackend::GpuBackend(const GpuOptions& o, const Ex2Profile* file_ex2)
    : opt_(o), ctx_(o.device) {
  const std::string arch = ctx_.device().arch();
  if (!o.module_path.empty()) {
    if (o.hdim != 0 && !is_decode_hdim(o.hdim))
      throw ModuleError("--hdim " + std::to_string(o.hdim) + ": allowed are 128 and 256", -1, false);
    try {
      external_.emplace(Module::from_file(o.module_path));
    } catch (const Error& e) {
      throw ModuleError(std::string(e.what()) + "\nmodule " + o.module_path + " cannot be loaded on device " +
                      std::to_string(o.device) + " (" + ctx_.device().name + ", " + arch +
                      "): a cubin must be built for exactly " + arch + " (nvcc -arch=" + arch +
                      " -cubin); PTX or a fatbin holding compute_XX PTX with XX <= " +
                      arch.substr(3) + " is JIT-compiled for it",
                  e.code, e.fault);
    }
  }
  std::string load_error;
  try {
    if (o.device_ex2)
      device_ex2_.emplace(*o.device_ex2);
    else
      device_ex2_.emplace(load_ex2_profile_for_arch(arch));
  } catch (const std::exception& e) {
    load_error = e.what();
  }
  ex2_source_ = make_ex2_source(arch, file_ex2, device_ex2_, load_error);
}

GpuBackend::~GpuBackend() = default;

std::string GpuBackend::description() const {
  return "GPU " + std::to_string(opt_.device) + ": " + describe_device(ctx_.device());
}

std::string GpuBackend::name() const {
  return "gpu:" + ctx_.device().arch() + ":" + (opt_.module_path.empty() ? "builtin" : opt_.module_path) +
         (opt_.gqa_decoders ? ":gqa" : "");
}

const Module& GpuBackend::module_for(const GoldenCase& c) const {
  if (external_) return *external_;
  const std::string hd = std::to_string(c.d.p.hdim);
  const std::string mod = c.kind == CaseKind::writer        ? "writers"
                          : opt_.gqa_decoders               ? "decode_gqa_hdim" + hd
                                                            : "decode_hdim" + hd;
  auto it = builtin_.find(mod);
  if (it != builtin_.end()) return it->second;
  const auto image = kernels::builtin_fatbin(mod);
  if (image.empty()) throw Error("no built-in kernel module '" + mod + "'", -1, false);
  return builtin_.emplace(mod, Module::from_image(image, "built-in " + mod)).first->second;
}

const Function* GpuBackend::kernel_for(const GoldenCase& c, std::string* why) const {
  const Module& m = module_for(c);
  std::string kname = golden::kernel_name(c.kind, c.format);
  if (c.kind == CaseKind::decode && opt_.gqa_decoders) kname += "_gqa";
  const std::string key = m.label() + "/" + kname;
  auto it = kernels_.find(key);
  if (it == kernels_.end()) {
    std::optional<Function> f;
    try {
      f.emplace(m.function(kname));
    } catch (const Error& e) {
      if (e.code != 500 /* CUDA_ERROR_NOT_FOUND */) throw;
      missing_[key] = e.what();
    }
    it = kernels_.emplace(key, f).first;
  }
  if (!it->second && why) *why = missing_[key];
  return it->second ? &*it->second : nullptr;
}

std::string GpuBackend::cannot_run(const GoldenCase& c) const {
  if (c.sparse && fault_case_.empty()) {  // a pool of production size: is there room for it?
    constexpr uint64_t kMargin = uint64_t(1) << 28;  // the context's own allocations, the kernel's stack
    ctx_.make_current();
    const uint64_t need = device_bytes(c), free = ctx_.free_memory();
    if (need + kMargin > free) {
      char b[200];
      std::snprintf(b, sizeof b, "its pools of production size need %.2f GiB of device memory, %.2f GiB are free",
                    double(need) / double(1ull << 30), double(free) / double(1ull << 30));
      return b;
    }
  }
  if (c.kind == CaseKind::decode) {
    const uint32_t hdim = c.d.p.hdim;
    if (external_) {
      if (opt_.hdim == 0)
        return "decode case, and --hdim was not given: say which HDIM (128 or 256) module " +
               opt_.module_path + " was built with";
      if (hdim != opt_.hdim)
        return "the case is for an HDIM=" + std::to_string(hdim) + " build; module " +
               opt_.module_path + " is HDIM=" + std::to_string(opt_.hdim) + " (--hdim)";
      if (c.threshold != opt_.threshold)
        return "the case is for THRESH " + fmt_float(c.threshold) + "; module " + opt_.module_path +
               " was built with " + fmt_float(opt_.threshold) + " (--threshold)";
    } else {
      if (opt_.gqa_decoders && c.d.p.head_dim != hdim)
        return "head_dim " + std::to_string(c.d.p.head_dim) + " on an HDIM=" + std::to_string(hdim) +
               " build: the gqa decoders do not implement docs/spec.md section 5.1 (head_dim != HDIM)";
      if (opt_.gqa_decoders && gqa::widest_heads_per_cta(c.d.p.num_q_heads, c.d.p.num_kv_heads) == 0)
        return "the gqa decoders serve 1 to 8 q heads of one kv head per CTA: " + std::to_string(c.d.p.num_q_heads) +
               " q heads on " + std::to_string(c.d.p.num_kv_heads) + " kv heads allow none";
      if (!is_decode_hdim(hdim))
        return "HDIM " + std::to_string(hdim) + ": the built-in decoders are HDIM 128 and 256";
      if (c.threshold != kSparseVThreshold)
        return "the case is for THRESH " + fmt_float(c.threshold) + "; the built-in decoders use " +
               fmt_float(kSparseVThreshold) + ": pass --module with a decoder built with "
               "-DTQ_PLUS_SPARSE_V_THRESHOLD=<it> and --threshold";
    }
  }
  // Stopped after a fault: no CUDA call (the modules are gone); run() says "not launched".
  if (!fault_case_.empty()) return "";
  std::string why;
  try {
    if (!kernel_for(c, &why)) return why;
  } catch (const Error& e) {
    return std::string("kernel module cannot be used: ") + e.what();
  }
  return "";
}

void GpuBackend::launch_case(const GoldenCase& c, CaseResult& r) {
  // Cases read from files were checked by read_case; cases built in memory are checked here: a
  // launch outside SPEC's ranges would write outside its device buffers.
  if (const std::string bad = common::check_case(c); !bad.empty())
    throw Error("refused before launch: " + bad, -1, false);
  std::string why;
  const Function* f = kernel_for(c, &why);
  if (!f) throw Error(why, -1, false);
  // Each buffer: [guard][data][guard] on the device (whole pools for a pool of production size,
  // device_buffers.h).
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  auto t = clock::now();
  const std::vector<judge::LaunchBuffer> bufs = judge::launch_buffers(c);
  std::vector<DeviceBuffer> dev;
  dev.reserve(bufs.size());
  std::map<std::string, uint64_t> at;  // name -> device address of the data (after the guard)
  for (const auto& b : bufs) {
    dev.push_back(upload_buffer(c, b));
    at[b.name] = dev.back().ptr() + kGuardBytes;
  }
  KernelArgs args;
  Dim3 grid, block{kThreadsPerBlock, 1, 1};
  if (c.kind == CaseKind::writer) {
    pack_writer_args(args, {at["key"], at["value"], at["k_cache"], at["v_cache"], at["slot_mapping"]},
                     c.w.p);
    grid.x = c.w.num_tokens;
  } else {
    pack_decode_args(args, {at["q"], at["k_cache"], at["v_cache"], at["output"], at["block_tables"],
                            at["seq_lens"]},
                     c.d.p);
    // GQA: the widest heads per CTA the kernels accept, 8 down to 1 (cannot_run refuses none).
    grid.x = opt_.gqa_decoders
                 ? c.d.p.num_q_heads / gqa::widest_heads_per_cta(c.d.p.num_q_heads, c.d.p.num_kv_heads)
                 : c.d.p.num_q_heads;
    grid.y = c.d.p.num_seqs;
  }
  times_.upload_s += since(t);
  t = clock::now();
  if (grid.x > 0 && grid.y > 0) {  // an empty grid launches nothing (and cuLaunchKernel refuses it)
    std::optional<Stream> stream;
    try {
      ctx_.synchronize();  // uploads complete before the kernel starts on its own stream
      stream.emplace();
      f->launch(grid, block, args.params(), 0, &*stream);
      wait_for_launch(*stream, opt_.launch_timeout_s, "case " + c.name + ", " + f->name());
    } catch (const LaunchTimeout& e) {
      // The kernel still runs and uses these buffers: cuMemFree would wait for it (forever, for a
      // hang), so the allocations and the stream are forgotten, not freed.
      for (DeviceBuffer& d : dev) d.release();
      stream->release();
      abandoned_ = true;
      throw Error(std::string(e.what()) + "\n  arguments: " + args.describe(), e.code, e.fault);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + "\n  arguments: " + args.describe(), e.code, e.fault);
    }
  }
  times_.kernel_s += since(t);
  ++times_.launches;
  t = clock::now();
  for (size_t i = 0; i < bufs.size(); ++i) download_buffer(c, bufs[i], dev[i], r);
  dev.clear();  // cuMemFree, timed with the download
  times_.download_s += since(t);
}

void GpuBackend::release_modules() {
  for (auto& [name, m] : builtin_) m.release();
  if (external_) external_->release();
}

void GpuBackend::reset_context() {
  kernels_.clear();
  missing_.clear();
  builtin_.clear();  // cuModuleUnload in a faulted context returns its sticky error, ignored
  external_.reset();
  ctx_.reset();
  {
    // A fault that survived the reset shows here rather than as a wrong verdict of the next case.
    DeviceBuffer probe(256);
    probe.fill(0, 256);
    ctx_.synchronize();
  }
  if (!opt_.module_path.empty()) external_.emplace(Module::from_file(opt_.module_path));
}

void GpuBackend::after_fault(const std::string& name, std::string& error) {
  faulted_cases_.push_back(name);
  switch (common::after_launch_error(true, abandoned_, opt_.reset_after_fault)) {
    case common::AfterLaunchError::abandon:
      release_modules();
      ctx_.abandon();
      break;
    case common::AfterLaunchError::reset_and_continue:
      try {
        reset_context();
        error += "\n  GPU context reset and modules reloaded; the next case runs in a fresh context";
        return;
      } catch (const Error& e) {
        error += "\n  GPU context reset failed: " + std::string(e.what()) + "; nothing more is launched";
        release_modules();
      }
      break;
    case common::AfterLaunchError::stop:
    case common::AfterLaunchError::next_case:
      break;
  }
  fault_case_ = name;
  not_launched_ = common::not_launched_message(name, abandoned_);
}

CaseResult GpuBackend::run(const GoldenCase& c) {
  CaseResult r;
  const std::string kname = golden::kernel_name(c.kind, c.format);
  if (!fault_case_.empty()) {
    r.error = not_launched_;
    return r;
  }
  try {
    ctx_.make_current();
    launch_case(c, r);
  } catch (const Error& e) {
    r.buffers.clear();
    r.inputs.clear();
    r.error = "case " + c.name + ", kernel " + kname + ": " + e.what();
    if (e.fault) after_fault(c.name, r.error);
  }
  return r;
}

}  // namespace tqref::gpu
