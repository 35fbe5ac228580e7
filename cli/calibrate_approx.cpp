#include "calibrate_approx.h"

#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>

#include "command.h"
#include "options.h"
#include "io/approx_units_io.h"
#include "io/data_dir.h"
#include "io/ex2_profile_io.h"
#include "io/input_file.h"
#include "io/text_escape.h"

namespace po = boost::program_options;

namespace tqref::cli {

namespace {

struct Options {
  std::string from_raw, out, arch, force_text;
  ApproxProvenance prov;
  bool force = false;
};

// One raw table of the probe: `entries` int8 deltas.
std::vector<int8_t> read_raw(const std::string& dir, const char* name, uint64_t entries) {
  const std::string path = dir + "/" + name;
  const std::string raw = InputFile(path, "--from-raw table").read_all(entries);
  if (raw.size() != entries)
    throw InputError(path + ": " + std::to_string(raw.size()) + " bytes; expected " +
                     std::to_string(entries) + " int8 deltas (harness/gpu/approx_explore.cu)");
  return std::vector<int8_t>(raw.begin(), raw.end());
}

}  // namespace

int calibrate_approx(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: tqref calibrate approx --from-raw DIR --arch sm_XX --device-name NAME --driver V\n"
      "                              --cuda V --date YYYY-MM-DD [--out FILE] [--force]\n"
      "  Converts the tables harness/gpu/approx_explore.cu measured (DIR/rcp_delta.i8,\n"
      "  DIR/sqrt_delta.i8) into the file the variants prec-div, prec-sqrt and fast-math read\n"
      "  (docs/approx-units.md). Options");
  Options o;
  desc.add_options()("help,h", "this text")
      ("from-raw", po::value(&o.from_raw), "the probe's output folder")
      ("arch", po::value(&o.arch), "the measured GPU's architecture (sm_90)")
      ("device-name", po::value(&o.prov.device_name), "the GPU measured")
      ("driver", po::value(&o.prov.driver_version), "its driver version")
      ("cuda", po::value(&o.prov.cuda_version), "the CUDA version")
      ("date", po::value(&o.prov.measured_date), "the measurement date (YYYY-MM-DD)")
      ("out", po::value(&o.out), "output file (default: $TQREF_DATA_DIR/hw/<arch>/approx.h5, or "
       "the source tree's data/hw/<arch>/approx.h5)")
      ("force", po::bool_switch(&o.force), "replace an existing file");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref calibrate approx", args, desc, vm)) return *rc;
  if (o.from_raw.empty() || o.arch.empty() || o.prov.device_name.empty() ||
      o.prov.driver_version.empty() || o.prov.cuda_version.empty() || o.prov.measured_date.empty()) {
    std::fprintf(stderr, "tqref calibrate approx: give --from-raw, --arch, --device-name, --driver, "
                 "--cuda and --date (the measurement and its provenance)\n");
    return kExitUsage;
  }
  if (const std::string why = arch_problem(o.arch); !why.empty()) {
    std::fprintf(stderr, "tqref calibrate approx: --arch %s\n", why.c_str());
    return kExitUsage;
  }
  o.prov.measured_by = "harness/gpu/approx_explore.cu";
  o.prov.regenerate_command = "tqref calibrate approx";
  for (const std::string& a : args) o.prov.regenerate_command += " " + a;
  const std::string out = o.out.empty() ? data_dir() + "/hw/" + o.arch + "/approx.h5" : o.out;
  try {
    const std::vector<int8_t> rcp = read_raw(o.from_raw, "rcp_delta.i8", kRcpEntries);
    const std::vector<int8_t> sqrt = read_raw(o.from_raw, "sqrt_delta.i8", kSqrtEntries);
    save_approx_units(out, o.arch, rcp, sqrt, o.prov, o.force);
  } catch (const std::invalid_argument& e) {  // a table outside the structure's ranges
    std::fprintf(stderr, "tqref calibrate approx: %s: %s\n", o.from_raw.c_str(), e.what());
    return kExitBadInput;
  }
  std::printf("%s\n", out.c_str());
  return kExitOk;
}

}  // namespace tqref::cli
