// `tqref calibrate ex2`: measures the GPU's MUFU.EX2 unit and writes its profile (docs/ex2.md).
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "command.h"
#include "options.h"
#include "io/atomic_output.h"
#include "io/data_dir.h"
#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "io/input_file.h"
#include "io/text_escape.h"
#include "tqref/build_info.h"
#include "tqref/ex2_fit.h"
#if TQREF_HAVE_GPU
#include "gpu/driver.h"
#include "gpu/ex2_calibration.h"
#endif

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

using namespace tqref;
using namespace tqref::cli;

struct Options {
  std::string out, arch = "auto", from_raw, from_profile, raw_out, device_name, driver, cuda, date;
  std::string store = "auto";  // --store: "auto" (datapath when it fits, else table) or "table"
  int device = 0;
  bool force = false;
  std::string command_line;
};

// Where the profile loader looks first (io/data_dir.h), so the next run finds the profile.
std::string default_out(const std::string& arch) { return data_dir() + "/hw/" + arch + "/ex2.h5"; }

// Writes through a temporary file and a rename, so a failed run never leaves a half profile, and
// refuses to replace an existing profile (possibly a committed one) without --force.
int write_profile(const Options& o, const std::string& out, const Ex2Profile& p,
                  const Ex2Provenance& prov) {
  if (fs::exists(out) && !o.force) {
    std::fprintf(stderr, "tqref calibrate ex2: %s exists; not overwriting it (pass --force to "
                 "replace it, or --out PATH)\n", out.c_str());
    return kExitBadInput;
  }
  const fs::path parent = fs::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (const std::string why = common::output_path_problem(out); !why.empty()) {
    std::fprintf(stderr, "tqref calibrate ex2: --out %s\n", why.c_str());
    return kExitBadInput;
  }
  save_ex2_profile(out, p, prov);  // read back before it is renamed into place
  std::printf("wrote %s (profile %s, %s, %llu bytes)\n", out.c_str(), p.id().c_str(),
              p.datapath() ? "datapath coefficients" : "fraction table",
              static_cast<unsigned long long>(fs::file_size(out)));
  return kExitOk;
}

// The profile for a measured fraction table: the datapath when a member of the family
// reproduces every entry (fit_ex2_datapath checks all of them), else the table itself; with
// --store table always the table (the measured ground truth the datapath is tested against).
// Prints what the fit found and records it in prov.fraction_note.
Ex2Profile profile_for_table(const Options& o, const std::string& arch,
                             const std::vector<uint32_t>& f, const Ex2FitResult& fit,
                             Ex2Provenance& prov) {
  std::printf("datapath fit (%s, %.2f s):\n%s", kEx2DatapathFamily, fit.seconds, fit.summary.c_str());
  const std::string id = ex2_profile_id(arch, f);
  if (o.store == "table") {
    std::printf("--store table: storing the measured table\n");
    prov.fraction_note = std::string("measured table, stored as measured (--store table); ") +
                         kEx2DatapathFamily + (fit.datapath ? " reproduces every entry" : " does not reproduce it");
    return Ex2Profile::from_table(id, arch, f);
  }
  if (fit.datapath) {
    uint32_t unique = 0;
    for (const Ex2SegmentFit& s : fit.segments) unique += s.feasible_pairs == 1;
    prov.fraction_note = std::string(kEx2DatapathFamily) + " fitted by per-segment interval "
                         "feasibility (tqref calibrate ex2), cut " + std::to_string(fit.datapath->cut) +
                         ", bias " + std::to_string(fit.datapath->bias) + " (" +
                         std::to_string(fit.bias_choices) + " possible), " + std::to_string(unique) +
                         " of 64 segments with a unique (C1, C2); all 2^23 + 1 entries of table " +
                         id + " reproduced";
    return Ex2Profile::from_datapath(id, arch, *fit.datapath);
  }
  std::printf("no member of the datapath family reproduces this table: storing the table\n");
  prov.fraction_note = std::string("measured table: no member of ") + kEx2DatapathFamily +
                       " reproduces it (" + fit.summary + ")";
  return Ex2Profile::from_table(id, arch, f);
}

// --from-raw FILE: a fraction table measured elsewhere (harness/gpu/ex2_explore.cu writes
// F[0 .. 2^23-1] as raw little-endian uint32; F[2^23] = 0.5 is then implied and checked by the
// model's invariants). Provenance comes from the command line.
int run_from_raw(const Options& o) {
  if (o.arch == "auto" || o.device_name.empty() || o.driver.empty() || o.cuda.empty() ||
      o.date.empty()) {
    std::fprintf(stderr, "tqref calibrate ex2 --from-raw: also give --arch sm_XX, --device-name, "
                 "--driver, --cuda and --date (the measurement's provenance)\n");
    return kExitUsage;
  }
  std::string raw;
  try {
    raw = InputFile(o.from_raw, "--from-raw").read_all(4 * uint64_t(kEx2FractionEntries));
  } catch (const InputError& e) {
    std::fprintf(stderr, "tqref calibrate ex2: %s\n", e.what());
    return kExitBadInput;
  }
  const uint64_t bytes = raw.size();
  const uint64_t n = bytes / 4;
  if (bytes % 4 != 0 || (n != kEx2FractionEntries && n != kEx2FractionEntries - 1)) {
    std::fprintf(stderr, "tqref calibrate ex2: %s has %llu bytes; expected 4 * 2^23 (F[0..2^23-1]) "
                 "or 4 * (2^23 + 1) little-endian uint32\n", o.from_raw.c_str(),
                 static_cast<unsigned long long>(bytes));
    return kExitBadInput;
  }
  std::vector<uint32_t> f(kEx2FractionEntries, 0x3F000000u);
  const auto byte = [&raw](uint64_t i) { return uint32_t(static_cast<unsigned char>(raw[i])); };
  for (uint64_t k = 0; k < n; ++k)
    f[k] = byte(4 * k) | byte(4 * k + 1) << 8 | byte(4 * k + 2) << 16 | byte(4 * k + 3) << 24;
  try {
    Ex2Profile::from_table("", o.arch, f);  // the structure's invariants, before fitting
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tqref calibrate ex2: %s: %s\n", o.from_raw.c_str(), e.what());
    return kExitBadInput;
  }
  Ex2Provenance prov{o.device_name, o.driver, o.cuda, o.date,
                     "raw fraction table " + fs::path(o.from_raw).filename().string() +
                         " (harness/gpu/ex2_explore.cu)",
                     o.command_line, ""};
  const Ex2Profile p = profile_for_table(o, o.arch, f, fit_ex2_datapath(f), prov);
  return write_profile(o, o.out.empty() ? default_out(o.arch) : o.out, p, prov);
}

// --from-profile FILE: a stored profile (format version 1 or 2) refitted and written as version
// 2 with the same id and the measurement's provenance.
int run_from_profile(const Options& o) {
  const Ex2Profile in = load_ex2_profile(o.from_profile);
  Ex2Provenance prov = read_ex2_provenance(o.from_profile);
  prov.regenerate_command = o.command_line;
  const std::vector<uint32_t> f = in.fraction_table();
  const Ex2Profile p = profile_for_table(o, in.arch(), f, fit_ex2_datapath(f), prov);
  return write_profile(o, o.out.empty() ? default_out(in.arch()) : o.out, p, prov);
}

#if TQREF_HAVE_GPU
std::string today_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char s[16];
  std::strftime(s, sizeof s, "%Y-%m-%d", &tm);
  return s;
}

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

int run_on_gpu(const Options& o) {
  if (!require_gpu("tqref calibrate ex2", " Nothing measured.")) return kExitNoDevice;
  const gpu::Driver* d = gpu::Driver::get();
  gpu::Context ctx(o.device);
  const gpu::DeviceInfo& dev = ctx.device();
  const std::string arch = dev.arch();
  if (o.arch != "auto" && o.arch != arch) {
    std::fprintf(stderr, "tqref calibrate ex2: --arch %s, but device %d (%s) is %s\n",
                 o.arch.c_str(), o.device, dev.name.c_str(), arch.c_str());
    return kExitUsage;
  }
  const std::string out = o.out.empty() ? default_out(arch) : o.out;
  if (fs::exists(out) && !o.force) {  // checked before the sweep as well as after it
    std::fprintf(stderr, "tqref calibrate ex2: %s exists; not overwriting it (pass --force to "
                 "replace it, or --out PATH)\n", out.c_str());
    return kExitBadInput;
  }
  const std::string driver = gpu::Driver::kernel_module_version();
  std::printf("device %d: %s (%s, %d SMs), driver %s, CUDA %s\n", o.device, dev.name.c_str(),
              arch.c_str(), dev.sm_count, driver.empty() ? "unknown" : driver.c_str(),
              d->api_version_string().c_str());
  int last = -1;
  const Ex2Measurement m = measure_ex2(ctx, arch, [&](int pass, uint64_t done, uint64_t total) {
    const int pct = int(done * 100 / total);
    if (pct / 10 != last / 10 || done == total) {
      std::printf("  pass %d/2 (%s): %3d%%\n", pass, pass == 1 ? "fraction table" : "check every input", pct);
      std::fflush(stdout);
      last = done == total ? -1 : pct;
    }
  });
  std::printf("probe kernel time %.1f ms\n", m.kernel_ms);
  if (!m.fraction_valid) {
    std::fprintf(stderr, "tqref calibrate ex2: the measured fraction table does not fit the "
                 "model's structure: %s. This GPU needs a new model (docs/ex2.md); no profile written.\n",
                 m.fraction_problem.c_str());
    return kExitMismatch;
  }
  print_classes(m);
  compare_with_known(arch, m.fraction);
  if (!o.raw_out.empty()) {
    // Whole or not at all, like every other output (io/atomic_output.h): 32 MiB in memory.
    std::string raw;
    raw.reserve(4 * m.fraction.size());
    for (uint32_t v : m.fraction)
      for (int b = 0; b < 4; ++b) raw.push_back(char(uint8_t(v >> (8 * b))));
    try {
      common::write_file_atomic(o.raw_out, raw);
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "tqref calibrate ex2: --raw-out: %s\n", e.what());
      return kExitBadInput;
    }
    std::printf("wrote %s (F[0 .. 2^23], raw uint32 LE)\n", o.raw_out.c_str());
  }
  if (m.total_mismatches() != 0) {
    std::fprintf(stderr, "tqref calibrate ex2: %" PRIu64 " hardware results differ from the model "
                 "built from this GPU's fraction table; no profile written (docs/ex2.md)\n",
                 m.total_mismatches());
    return kExitMismatch;
  }
  Ex2Provenance prov{dev.name, driver.empty() ? "unknown" : driver, d->api_version_string(),
                     today_utc(),
                     std::string("tqref calibrate ex2 ") + kVersion + " (commit " + kGitCommit +
                         "), probe tqref_ex2_probe (kernels/testing/probes/ex2_probe.cu)",
                     o.command_line, ""};
  const Ex2Profile p = profile_for_table(o, arch, m.fraction, m.fit, prov);
  return write_profile(o, out, p, prov);
}
#else
int run_on_gpu(const Options&) {
  require_gpu("tqref calibrate ex2", " Rebuild with nvcc, or convert a raw table with --from-raw.");
  return kExitNoDevice;
}
#endif

int cmd_calibrate(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: tqref calibrate ex2 [options]\n"
      "  Measures the GPU's MUFU.EX2 unit over every non-positive float and every NaN, fits the\n"
      "  datapath's coefficients to the fraction table (or keeps the table when no member of the\n"
      "  family fits), checks the model against each result and writes the profile (docs/ex2.md).\n"
      "  Options");
  Options o;
  desc.add_options()("help,h", "this text")
      ("out", po::value(&o.out), "output profile (default: where the loader looks first, "
       "$TQREF_DATA_DIR/hw/<arch>/ex2.h5, or the source tree's data/hw/<arch>/ex2.h5 when "
       "TQREF_DATA_DIR is unset)")
      ("arch", po::value(&o.arch), "sm_XX, or auto (the device's)")
      ("device", po::value(&o.device), "CUDA device ordinal (default 0)")
      ("force", po::bool_switch(&o.force), "replace an existing profile")
      ("raw-out", po::value(&o.raw_out), "also write the measured F[0 .. 2^23] as raw uint32 LE "
       "(input of harness/gpu/make_ex2_readings.py)")
      ("from-raw", po::value(&o.from_raw), "convert a raw fraction table (uint32 LE) instead")
      ("from-profile", po::value(&o.from_profile), "refit a stored profile (format 1 or 2) and "
       "write it as format 2, same id and provenance")
      ("store", po::value(&o.store), "auto (the datapath's coefficients when a member of the "
       "family reproduces every entry, else the table; default) or table (always the table)")
      ("device-name", po::value(&o.device_name), "with --from-raw: the GPU measured")
      ("driver", po::value(&o.driver), "with --from-raw: its driver version")
      ("cuda", po::value(&o.cuda), "with --from-raw: the CUDA version")
      ("date", po::value(&o.date), "with --from-raw: the measurement date (YYYY-MM-DD)");
  if (args.empty() || args[0] != "ex2") {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::cout << desc << "\n";
      return kExitOk;
    }
    std::fprintf(stderr, "usage: tqref calibrate ex2 [options]  (the only unit calibrated so far is ex2)\n");
    return kExitUsage;
  }
  po::variables_map vm;
  const std::vector<std::string> ex2_args(args.begin() + 1, args.end());
  if (const auto rc = parse_options("tqref calibrate ex2", ex2_args, desc, vm)) return *rc;
  // Checked before any GPU work: a typo in the path fails now, not after the 2^32-input sweep.
  if (!o.raw_out.empty())
    if (const std::string why = common::output_path_problem(o.raw_out); !why.empty()) {
      std::fprintf(stderr, "tqref calibrate ex2: --raw-out %s\n", why.c_str());
      return kExitUsage;
    }
  o.command_line = "tqref calibrate";
  for (const auto& a : args)
    o.command_line += a.find_first_of(" \t'\"") == std::string::npos ? " " + a : " '" + a + "'";
  if (!o.from_raw.empty() && !o.from_profile.empty()) {
    std::fprintf(stderr, "tqref calibrate ex2: give --from-raw or --from-profile, not both\n");
    return kExitUsage;
  }
  if (o.store != "auto" && o.store != "table") {
    std::fprintf(stderr, "tqref calibrate ex2: --store '%s'; allowed: auto or table\n",
                 printable(o.store).c_str());
    return kExitUsage;
  }
  if (!o.from_profile.empty()) return run_from_profile(o);
  return o.from_raw.empty() ? run_on_gpu(o) : run_from_raw(o);
}

}  // namespace

TQREF_COMMAND("calibrate", "measure a GPU unit (ex2) and write its hardware profile", cmd_calibrate);
