#include "gpu/calibrate_ex2.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "gpu/driver.h"
#include "gpu/ex2_calibration.h"
#include "io/atomic_output.h"
#include "io/exit_code.h"
#include "io/utc_time.h"
#include "tqref/build_info.h"

namespace fs = std::filesystem;

namespace tqref::gpu {

namespace {

void print_classes(const Ex2Measurement& m) {
  std::printf("%-22s %12s %10s\n", "input class", "inputs", "mismatches");
  for (const auto& c : m.classes) {
    std::printf("%-22s %12" PRIu64 " %10" PRIu64 "\n", c.name.c_str(), c.inputs, c.mismatches);
    for (size_t i = 0; i < c.example_input.size(); ++i)
      std::printf("    x=0x%08" PRIX32 " hardware 0x%08" PRIX32 " model 0x%08" PRIX32 "\n",
                  c.example_input[i], c.example_got[i], c.example_model[i]);
  }
  std::printf("%-22s %12" PRIu64 " %10" PRIu64 "\n", "total", m.total_inputs(), m.total_mismatches());
}

// Against the profile already known for this arch (if any): same table, or how many entries differ.
void compare_with_known(const std::string& arch, const std::vector<uint32_t>& f) {
  try {
    const std::string path = find_ex2_profile(arch);
    const Ex2Profile known = load_ex2_profile(path);
    const std::vector<uint32_t> known_f = known.fraction_table();
    uint64_t diff = 0;
    for (size_t k = 0; k < f.size(); ++k) diff += known_f[k] != f[k];
    std::printf("existing profile %s (%s): %s\n", path.c_str(), known.id().c_str(),
                diff == 0 ? "identical fraction table"
                          : (std::to_string(diff) + " entries of F differ").c_str());
  } catch (const Ex2ProfileError&) {
    std::printf("no existing profile for %s to compare with\n", arch.c_str());
  }
}

// The measured F as raw uint32 LE, whole or not at all (io/atomic_output.h): 32 MiB in memory.
int write_raw(const std::string& path, const std::vector<uint32_t>& fraction) {
  std::string raw;
  raw.reserve(4 * fraction.size());
  for (uint32_t v : fraction)
    for (int b = 0; b < 4; ++b) raw.push_back(char(uint8_t(v >> (8 * b))));
  try {
    common::write_file_atomic(path, raw);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "tqref calibrate ex2: --raw-out: %s\n", e.what());
    return kExitBadInput;
  }
  std::printf("wrote %s (F[0 .. 2^23], raw uint32 LE)\n", path.c_str());
  return kExitOk;
}

Ex2Measurement measure(const Context& ctx, const std::string& arch) {
  int last = -1;
  return measure_ex2(ctx, arch, [&](int pass, uint64_t done, uint64_t total) {
    const int pct = int(done * 100 / total);
    if (pct / 10 != last / 10 || done == total) {
      std::printf("  pass %d/2 (%s): %3d%%\n", pass, pass == 1 ? "fraction table" : "check every input", pct);
      std::fflush(stdout);
      last = done == total ? -1 : pct;
    }
  });
}

// The measurement's verdict: 0 when the model built from it reproduces every result.
int check_measurement(const Ex2Measurement& m) {
  if (!m.fraction_valid) {
    std::fprintf(stderr, "tqref calibrate ex2: the measured fraction table does not fit the "
                 "model's structure: %s. This GPU needs a new model (docs/ex2.md); no profile written.\n",
                 m.fraction_problem.c_str());
    return kExitMismatch;
  }
  print_classes(m);
  return kExitOk;
}

}  // namespace

int calibrate_ex2(const CalibrateEx2Options& o) {
  const Driver* d = Driver::get();
  Context ctx(o.device);
  const DeviceInfo& dev = ctx.device();
  const std::string arch = dev.arch();
  if (o.arch != "auto" && o.arch != arch) {
    std::fprintf(stderr, "tqref calibrate ex2: --arch %s, but device %d (%s) is %s\n",
                 o.arch.c_str(), o.device, dev.name.c_str(), arch.c_str());
    return kExitUsage;
  }
  const std::string out = o.out.empty() ? default_ex2_profile_path(arch) : o.out;
  if (fs::exists(out) && !o.force) {  // checked before the sweep as well as after it
    std::fprintf(stderr, "tqref calibrate ex2: %s exists; not overwriting it (pass --force to "
                 "replace it, or --out PATH)\n", out.c_str());
    return kExitBadInput;
  }
  const std::string driver = Driver::kernel_module_version();
  std::printf("device %d: %s (%s, %d SMs), driver %s, CUDA %s\n", o.device, dev.name.c_str(),
              arch.c_str(), dev.sm_count, driver.empty() ? "unknown" : driver.c_str(),
              d->api_version_string().c_str());
  const Ex2Measurement m = measure(ctx, arch);
  std::printf("probe kernel time %.1f ms\n", m.kernel_ms);
  if (const int rc = check_measurement(m)) return rc;
  compare_with_known(arch, m.fraction);
  if (!o.raw_out.empty())
    if (const int rc = write_raw(o.raw_out, m.fraction)) return rc;
  if (m.total_mismatches() != 0) {
    std::fprintf(stderr, "tqref calibrate ex2: %" PRIu64 " hardware results differ from the model "
                 "built from this GPU's fraction table; no profile written (docs/ex2.md)\n",
                 m.total_mismatches());
    return kExitMismatch;
  }
  Ex2Provenance prov{dev.name, driver.empty() ? "unknown" : driver, d->api_version_string(),
                     utc_date(),
                     std::string("tqref calibrate ex2 ") + kVersion + " (commit " + kGitCommit +
                         "), probe tqref_ex2_probe (kernels/testing/probes/ex2_probe.cu)",
                     o.command_line, ""};
  return store_measured_profile(o.store, o.force, arch, m.fraction, m.fit, prov, out);
}

}  // namespace tqref::gpu
