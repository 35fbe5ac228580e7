// `tqref calibrate ex2`: measures the GPU's MUFU.EX2 unit and writes its profile (docs/ex2.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "command.h"
#include "ex2_profile_io.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

using namespace tqref;
using namespace tqref::cli;

struct Options {
  std::string out, arch = "auto", from_raw, device_name, driver, cuda, date;
  bool force = false;
  std::string command_line;
};

std::string default_out(const std::string& arch) {
  const char* d = std::getenv("TQREF_DATA_DIR");
  const std::string root = (d && *d) ? d : "tqref-data";
  return root + "/hw/" + arch + "/ex2.h5";
}

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
  if (!parent.empty()) fs::create_directories(parent);
  const std::string tmp = out + ".partial";
  save_ex2_profile(tmp, p, prov);
  // Read back before publishing: the file must decode to the very table that was measured.
  Ex2Profile back = load_ex2_profile(tmp);
  if (back.fraction_table() != p.fraction_table() || back.id() != p.id()) {
    fs::remove(tmp);
    std::fprintf(stderr, "tqref calibrate ex2: %s does not read back to the measured table\n",
                 tmp.c_str());
    return kExitInternal;
  }
  fs::rename(tmp, out);
  std::printf("wrote %s (profile %s, %llu bytes)\n", out.c_str(), p.id().c_str(),
              static_cast<unsigned long long>(fs::file_size(out)));
  return kExitOk;
}

// --from-raw FILE: a fraction table measured elsewhere (harness/calibrate/ex2_explore.cu writes
// F[0 .. 2^23-1] as raw little-endian uint32; F[2^23] = 0.5 is then implied and checked by the
// model's invariants). Provenance comes from the command line.
int run_from_raw(const Options& o) {
  if (o.arch == "auto" || o.device_name.empty() || o.driver.empty() || o.cuda.empty() ||
      o.date.empty()) {
    std::fprintf(stderr, "tqref calibrate ex2 --from-raw: also give --arch sm_XX, --device-name, "
                 "--driver, --cuda and --date (the measurement's provenance)\n");
    return kExitUsage;
  }
  std::ifstream in(o.from_raw, std::ios::binary | std::ios::ate);
  if (!in) {
    std::fprintf(stderr, "tqref calibrate ex2: cannot open %s\n", o.from_raw.c_str());
    return kExitBadInput;
  }
  const uint64_t bytes = static_cast<uint64_t>(in.tellg());
  const uint64_t n = bytes / 4;
  if (bytes % 4 != 0 || (n != kEx2FractionEntries && n != kEx2FractionEntries - 1)) {
    std::fprintf(stderr, "tqref calibrate ex2: %s has %llu bytes; expected 4 * 2^23 (F[0..2^23-1]) "
                 "or 4 * (2^23 + 1) little-endian uint32\n", o.from_raw.c_str(),
                 static_cast<unsigned long long>(bytes));
    return kExitBadInput;
  }
  std::vector<uint32_t> f(kEx2FractionEntries, 0x3F000000u);
  in.seekg(0);
  std::vector<unsigned char> raw(bytes);
  in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(bytes));
  for (uint64_t k = 0; k < n; ++k)
    f[k] = uint32_t(raw[4 * k]) | uint32_t(raw[4 * k + 1]) << 8 | uint32_t(raw[4 * k + 2]) << 16 |
           uint32_t(raw[4 * k + 3]) << 24;
  Ex2Profile p;
  try {
    const std::string id = ex2_profile_id(o.arch, f);
    p = Ex2Profile::from_table(id, o.arch, std::move(f));
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "tqref calibrate ex2: %s: %s\n", o.from_raw.c_str(), e.what());
    return kExitBadInput;
  }
  Ex2Provenance prov{o.device_name, o.driver, o.cuda, o.date,
                     "raw fraction table " + fs::path(o.from_raw).filename().string() +
                         " (harness/calibrate/ex2_explore.cu)",
                     o.command_line};
  return write_profile(o, o.out.empty() ? default_out(o.arch) : o.out, p, prov);
}

int cmd_calibrate(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: tqref calibrate ex2 [options]\n"
      "  Measures the GPU's MUFU.EX2 unit over every non-positive float and every NaN, checks the\n"
      "  model against each result and writes the profile (docs/ex2.md). Options");
  Options o;
  desc.add_options()("help,h", "this text")
      ("out", po::value(&o.out), "output profile (default $TQREF_DATA_DIR/hw/<arch>/ex2.h5, or "
       "./tqref-data/hw/<arch>/ex2.h5)")
      ("arch", po::value(&o.arch), "sm_XX, or auto (the device's)")
      ("force", po::bool_switch(&o.force), "replace an existing profile")
      ("from-raw", po::value(&o.from_raw), "convert a raw fraction table (uint32 LE) instead")
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
  try {
    po::store(po::command_line_parser(std::vector<std::string>(args.begin() + 1, args.end()))
                  .options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "tqref calibrate ex2: %s\n", e.what());
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return kExitOk;
  }
  o.command_line = "tqref calibrate";
  for (const auto& a : args)
    o.command_line += a.find_first_of(" \t'\"") == std::string::npos ? " " + a : " '" + a + "'";
  try {
    return run_from_raw(o);
  } catch (const Ex2ProfileError& e) {
    std::fprintf(stderr, "tqref calibrate ex2: %s\n", e.what());
    return kExitBadInput;
  }
}

}  // namespace

TQREF_COMMAND("calibrate", "measure a GPU unit (ex2) and write its hardware profile", cmd_calibrate);
