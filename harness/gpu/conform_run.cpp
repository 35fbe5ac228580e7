#include "gpu/conform_run.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "conform/hdim_probe.h"
#include "conform/module_pin.h"
#include "conform/options.h"
#include "gpu/gpu_backend.h"
#include "io/case_io.h"
#include "io/ex2_profile_io.h"
#include "io/sha256.h"
#include "tqref/builtin_kernels.h"
#include "anatomy/anatomy.h"
#include "judge/judge_case.h"
#include "judge/report.h"

namespace fs = std::filesystem;

namespace tqref::conform {

namespace {

using golden::CaseKind;
using golden::GoldenCase;

bool format_of_kernel(const std::string& k, Format* f) {
  const size_t at = k.rfind("_turbo");
  return at != std::string::npos && golden::parse_format(k.substr(at + 1), f);
}

// The module on the run's device, with the run's EX2 profile of this GPU (loaded once).
gpu::GpuOptions module_options(const ModuleResult& m, const GpuRunOptions& o, uint32_t hdim) {
  gpu::GpuOptions g{o.device, m.file.path, hdim, o.threshold};
  g.device_ex2 = o.device_ex2;
  return g;
}

// The decode probe of hdim_probe.h for every decoder the module holds, at one HDIM.
ProbeAtHdim probe(ModuleResult& m, const GpuRunOptions& o, uint32_t hdim, const Ex2Profile& ex2) {
  ProbeAtHdim p;
  p.hdim = hdim;
  gpu::GpuBackend b(module_options(m, o, hdim), &ex2);
  for (const std::string& k : m.found) {
    Format f;
    if (!is_decoder_kernel(k) || !format_of_kernel(k, &f)) continue;
    const GoldenCase c = hdim_probe_case(f, hdim, o.threshold, ex2);
    ++p.kernels;
    const judge::CaseResult r = b.run(c);
    if (!r.error.empty()) {
      if (p.error.empty()) p.error = r.error;
      if (!b.fault_case().empty()) {
        m.fault = "HDIM probe/" + c.name;
        return p;
      }
      continue;
    }
    // What it wrote decides the HDIM (hdim_probe.h); the values, which do not depend on the EX2
    // unit, are compared as they are.
    p.writes.push_back(hdim_from_writes(observe_probe_writes(c, r)));
    const judge::CaseVerdict v = judge::compare_case(c, r);
    if (v.pass) ++p.exact;
    p.bytes_differing += v.bytes_differing;
  }
  m.launch_times += b.launch_times();
  return p;
}

void establish_hdim(ModuleResult& m, const GpuRunOptions& o) {
  bool any_decoder = false;
  for (const auto& k : m.found) any_decoder = any_decoder || is_decoder_kernel(k);
  if (!any_decoder) return;
  m.hdim = hdim_for(o.hdims, m.file);
  if (m.hdim) {
    m.hdim_exact = true;
    m.hdim_evidence = "stated";
    m.hdim_why = "stated with --hdim";
  } else {
    // Probe expectations with the GPU's own profile when there is one; otherwise with the
    // reference table, which gives the same bytes (hdim_probe.h).
    std::optional<Ex2Profile> reference;
    const Ex2Profile* ex2 = o.device_ex2;
    if (!ex2) {
      reference.emplace(Ex2Profile::from_table("reference-ex2", "reference", ex2_reference_table()));
      ex2 = &*reference;
    }
    const ProbeAtHdim a = probe(m, o, 128, *ex2);
    if (!m.fault.empty()) return;
    const ProbeAtHdim b = probe(m, o, 256, *ex2);
    if (!m.fault.empty()) return;
    const HdimChoice c = choose_hdim(a, b);
    m.hdim = c.hdim;
    m.hdim_exact = c.decided;
    m.hdim_evidence = c.evidence;
    m.hdim_why = c.why;
  }
  if (!o.device_ex2) {
    m.decoder_level = judge::Level::T;
    m.decoder_level_why = "no EX2 profile for this GPU (tqref conform --calibrate measures one)";
  } else if (!m.hdim_exact) {
    m.decoder_level = judge::Level::T;
    m.decoder_level_why = "the HDIM probe decided nothing (neither the writes nor the values)";
  } else {
    m.decoder_level = judge::Level::D;
    m.decoder_level_why = "EX2 profile " + o.device_ex2->id() + " of this GPU";
  }
  std::printf("  decoders: HDIM %u (%s); level %c\n", m.hdim, m.hdim_why.c_str(), char(m.decoder_level));
}

std::string dir_name(const std::string& suite) {
  return is_named_suite(suite) ? suite : fs::path(suite).stem().string();
}

void run_suite(ModuleResult& m, const GpuRunOptions& o, const SuiteFile& sf) {
  SuiteRun su;
  su.suite = sf.name;
  su.file = sf.path;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    // Opened once for the run (open_suite_files); again here only where that failed, so that this
    // module reports why.
    const std::shared_ptr<const OpenedSuite> opened =
        sf.opened ? sf.opened : std::make_shared<const OpenedSuite>(open_suite(sf.path));
    const h5::Node& root = opened->root;
    const golden::Provenance& prov = opened->prov;
    const Ex2Profile* fex2 = opened->ex2 ? &*opened->ex2 : nullptr;
    gpu::GpuBackend backend(module_options(m, o, m.hdim), fex2);
    const judge::Ex2Source src = backend.decode_ex2();
    const bool level_t = m.decoder_level == judge::Level::T;
    h5::Node cases = root.group("cases");
    for (const std::string& name : cases.children()) {
      // A case is read only by the modules that run it: the header (attributes) decides first,
      // so one-kernel modules and the other HDIM's build do not read the suite's data again.
      bool pooled = false;
      const GoldenCase h = golden::read_case_header(cases, name, &pooled);
      const std::string kernel = golden::kernel_name(h.kind, h.format);
      if (!m.found.count(kernel)) continue;  // another module's kernel
      std::string why = judge::dispatch_skip_reason(o.dispatch, h);
      if (why.empty() && !pooled) why = backend.cannot_run(h);  // parameters only, unless pooled
      GoldenCase c;
      if (why.empty()) {
        // diagnostics hold the fp64 references: level T, and launches outside the contract
        c = golden::read_case(cases, name, level_t || o.out_of_contract == judge::OutOfContractLevel::T);
        if (pooled) why = backend.cannot_run(c);  // room on the device for its pools
      }
      if (!why.empty()) {
        ++su.skipped[why];
        ++su.skipped_per_kernel[kernel];
        continue;
      }
      judge::JudgedCase j = judge::run_and_judge(c, backend, src, fex2, level_t, o.topt, o.out_of_contract,
                                                          anatomy::explain_with_known_units);
      bool failed = !j.verdict.pass;
      if (failed)
        std::fputs(j.tolerance ? (judge::level_t_text(*j.tolerance) + judge::explanation_text(j.verdict.explanation)).c_str()
                               : judge::report_text(j.verdict, o.show).c_str(), stdout);
      su.verdicts.push_back(std::move(j.verdict));
      if (j.tolerance) su.tolerance.push_back(std::move(*j.tolerance));
      if (o.invariance && backend.fault_case().empty()) {
        su.invariance.push_back(judge::judge_level_i(c, backend, o.iopt));
        if (!su.invariance.back().pass) {
          std::fputs(judge::level_i_text(su.invariance.back()).c_str(), stdout);
          failed = true;
        }
      }
      if (failed) {
        const std::string dir = o.out_dir + "/reproducers/" + m.tag + "/" + dir_name(sf.name);
        fs::create_directories(dir);
        su.reproducers[name] = golden::write_reproducer(dir, sf.path, prov, golden::read_case(cases, name, true));
      }
      if (!backend.fault_case().empty()) {
        m.fault = sf.name + "/" + backend.fault_case();
        break;
      }
    }
    m.launch_times += backend.launch_times();
  } catch (const gpu::Error& e) {
    m.error = "suite " + sf.name + ": " + e.what();
    if (e.fault && m.fault.empty()) m.fault = sf.name + " (" + e.what() + ")";
  } catch (const std::exception& e) {  // h5::Error, BadCase: the golden file, not the module
    m.error = "suite " + sf.name + " (" + sf.path + "): " + e.what();
  }
  size_t failed = 0, i_failed = 0;
  for (const auto& v : su.verdicts) failed += !v.pass;
  for (const auto& v : su.invariance) i_failed += !v.pass;
  uint64_t skipped = 0;
  for (const auto& [k, n] : su.skipped) skipped += n;
  std::printf("  %s: %zu cases, %zu passed, %zu failed, %llu skipped; level I: %zu of %zu invariant (%.1f s)\n",
              sf.name.c_str(), su.verdicts.size(), su.verdicts.size() - failed, failed,
              static_cast<unsigned long long>(skipped), su.invariance.size() - i_failed, su.invariance.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  m.suites.push_back(std::move(su));
}

// The embedded module (kernels/builtin) whose fatbin has m's bytes, "" for any other module: the
// report states our own decoders' documented behaviour on launches outside the contract.
std::string builtin_module_named(const ModuleResult& m) {
  for (const char* name : {"writers", "decode_hdim128", "decode_hdim256"}) {
    const auto image = kernels::builtin_fatbin(name);
    if (!image.empty() && trace::sha256_hex(image.data(), image.size()) == m.sha256) return name;
  }
  return "";
}

}  // namespace

void run_module(ModuleResult& m, const GpuRunOptions& o) {
  std::printf("%s: %s\n", m.tag.c_str(), m.file.path.c_str());
  m.builtin = builtin_module_named(m);
  gpu::Context ctx(o.device);  // held for the whole module; released before the next
  const uint32_t sm = uint32_t(ctx.device().cc_major * 10 + ctx.device().cc_minor);
  try {
    const gpu::Module mod = gpu::Module::from_file(m.file.path);
    for (const std::string& k : contract_kernels()) {
      try {
        mod.function(k);
        m.found.insert(k);
      } catch (const gpu::Error& e) {
        if (e.code != 500 /* CUDA_ERROR_NOT_FOUND */) m.error = e.what();
      }
    }
  } catch (const gpu::Error& e) {
    m.load_error = e.what();
    m.load_explanation = load_mismatch(m.inspection, sm);
    if (m.load_explanation.empty())
      m.load_explanation = "the driver refused it although its images (" + m.inspection.targets_text() +
                           ") should suit sm_" + std::to_string(sm) + "; see the driver's error";
    std::printf("  cannot load: %s\n", m.load_explanation.c_str());
    return;
  }
  std::string found;
  for (const auto& k : m.found) found += " " + k;
  std::printf("  kernels:%s\n", found.empty() ? " none of the six" : found.c_str());
  if (m.found.empty() || !m.error.empty()) return;
  try {
    establish_hdim(m, o);
  } catch (const gpu::Error& e) {
    m.error = std::string("HDIM probe: ") + e.what();
    if (e.fault) m.fault = "HDIM probe";
  }
  if (!m.fault.empty() || !m.error.empty()) return;
  for (const SuiteFile& sf : o.suites) {
    run_suite(m, o, sf);
    if (!m.fault.empty()) break;
  }
  m.pin = pin_module(m).verdict;
  if (!m.pin.empty()) std::printf("  %s\n", m.pin.c_str());
  const judge::LaunchTimes& t = m.launch_times;
  std::printf("  GPU time: %llu launches; buffers to the device %.2f s, kernels %.2f s, buffers back %.2f s\n",
              (unsigned long long)t.launches, t.upload_s, t.kernel_s, t.download_s);
}

}  // namespace tqref::conform
