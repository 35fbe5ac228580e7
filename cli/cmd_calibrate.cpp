// `tqref calibrate ex2`: measures the GPU's MUFU.EX2 unit and writes its profile (docs/ex2.md).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "calibrate_approx.h"
#include "command.h"
#include "options.h"
#include "io/atomic_output.h"
#include "io/data_dir.h"
#include "io/ex2_profile_io.h"
#include "io/ex2_profile_store.h"
#include "io/hdf5_util.h"
#include "io/input_file.h"
#include "io/text_escape.h"
#include "tqref/build_info.h"
#include "tqref/ex2_fit.h"
#include "gpu/calibrate_ex2.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

using namespace tqref;
using namespace tqref::cli;

struct Options {
  std::string out, arch = "auto", from_raw, from_profile, raw_out, device_name, driver, cuda, date;
  Ex2Store store = Ex2Store::automatic;  // --store
  int device = 0;
  bool force = false;
  std::string command_line;
};


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
  return store_measured_profile(o.store, o.force, o.arch, f, fit_ex2_datapath(f), prov,
                                o.out.empty() ? default_ex2_profile_path(o.arch) : o.out);
}

// --from-profile FILE: a stored profile (format version 1 or 2) refitted and written as version
// 2 with the same id and the measurement's provenance.
int run_from_profile(const Options& o) {
  const Ex2Profile in = load_ex2_profile(o.from_profile);
  Ex2Provenance prov = read_ex2_provenance(o.from_profile);
  prov.regenerate_command = o.command_line;
  const std::vector<uint32_t> f = in.fraction_table();
  return store_measured_profile(o.store, o.force, in.arch(), f, fit_ex2_datapath(f), prov,
                                o.out.empty() ? default_ex2_profile_path(in.arch()) : o.out);
}

// require_gpu also refuses a build without CUDA (gpu/availability.h says so): one hint for both.
int run_on_gpu(const Options& o) {
  if (!require_gpu("tqref calibrate ex2", " Nothing measured; a raw table measured elsewhere converts "
                   "with --from-raw."))
    return kExitNoDevice;
  gpu::CalibrateEx2Options c;
  c.device = o.device;
  c.arch = o.arch;
  c.out = o.out;
  c.force = o.force;
  c.store = o.store;
  c.raw_out = o.raw_out;
  c.command_line = o.command_line;
  return gpu::calibrate_ex2(c);
}

int cmd_calibrate(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: tqref calibrate ex2 [options]\n"
      "  Measures the GPU's MUFU.EX2 unit over every non-positive float and every NaN, fits the\n"
      "  datapath's coefficients to the fraction table (or keeps the table when no member of the\n"
      "  family fits), checks the model against each result and writes the profile (docs/ex2.md).\n"
      "  Options");
  Options o;
  std::string store = "auto";
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
      ("store", po::value(&store), "auto (the datapath's coefficients when a member of the "
       "family reproduces every entry, else the table; default) or table (always the table)")
      ("device-name", po::value(&o.device_name), "with --from-raw: the GPU measured")
      ("driver", po::value(&o.driver), "with --from-raw: its driver version")
      ("cuda", po::value(&o.cuda), "with --from-raw: the CUDA version")
      ("date", po::value(&o.date), "with --from-raw: the measurement date (YYYY-MM-DD)");
  if (!args.empty() && args[0] == "approx")
    return calibrate_approx(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args.empty() || args[0] != "ex2") {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::cout << desc << "\n";
      return kExitOk;
    }
    std::fprintf(stderr, "usage: tqref calibrate ex2 [options]\n"
                 "       tqref calibrate approx --from-raw DIR ...  (tables measured elsewhere)\n");
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
  if (!parse_ex2_store(store, &o.store)) {
    std::fprintf(stderr, "tqref calibrate ex2: --store '%s'; allowed: auto or table\n",
                 printable(store).c_str());
    return kExitUsage;
  }
  if (!o.from_profile.empty()) return run_from_profile(o);
  return o.from_raw.empty() ? run_on_gpu(o) : run_from_raw(o);
}

}  // namespace

TQREF_COMMAND("calibrate", "measure a GPU unit (ex2; approx from raw tables) and write its profile",
              cmd_calibrate);
