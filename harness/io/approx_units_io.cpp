#include "io/approx_units_io.h"

#include <filesystem>

#include "io/data_dir.h"
#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "io/sha256.h"
#include "io/text_escape.h"

namespace fs = std::filesystem;

namespace tqref {

namespace {

constexpr const char* kFormat = "tqref-approx-units";
constexpr int64_t kFormatVersion = 1;
constexpr const char* kRcpDataset = "rcp_delta";
constexpr const char* kSqrtDataset = "sqrt_delta";

constexpr const char* kStructureRules =
    "rcp: NaN -> 0x7FFFFFFF, +-0 -> +-Inf, +-Inf -> +-0, normal +-1.m * 2^E -> +-R[m] * 2^-E "
    "rounded once, subnormal x -> rcp(x * 2^24) * 2^24; sqrt: NaN, x < 0, -Inf -> 0x7FFFFFFF, "
    "+-0 -> +-0, +Inf -> +Inf, normal f * 4^k (f in [1, 4)) -> S[f] * 2^k, subnormal x -> "
    "sqrt(x * 2^24) * 2^-12; .ftz: subnormal inputs and results are zero of their sign; "
    "div(a, b) = a' * rcp.ftz(b') rounded once, (a', b') = (a, b) * s each rounded, s = 1/4 for "
    "div.full if |b| > 2^126, s = 2^24 without .ftz if |b| < 2^-126, else 1 (see "
    "model/tqref/approx.h)";

std::string read_attr(const h5::Node& f, const char* name) {
  if (!f.has_attr(name)) throw ApproxUnitsError(f.where() + ": attribute '" + name + "' missing");
  return f.attr_string(name);
}

std::string tables_sha256(const std::vector<int8_t>& rcp, const std::vector<int8_t>& sqrt) {
  std::vector<uint8_t> bytes(rcp.begin(), rcp.end());
  bytes.insert(bytes.end(), sqrt.begin(), sqrt.end());
  return trace::sha256_hex(bytes.data(), bytes.size());
}

std::vector<int8_t> read_delta(const h5::Node& f, const char* name, uint64_t entries) {
  std::vector<uint64_t> shape{entries};
  try {
    return f.read<int8_t>(name, &shape);
  } catch (const h5::Error& e) {
    throw ApproxUnitsError(std::string(e.what()) + " (expected int8 [" + std::to_string(entries) +
                           "])");
  }
}

}  // namespace

ApproxUnits load_approx_units(const std::string& path) {
  try {
    h5::Node f = h5::Node::open_file(path);
    if (read_attr(f, "format") != kFormat)
      throw ApproxUnitsError(f.where() + ": attribute 'format' is '" +
                             printable(f.attr_string("format")) + "'; expected '" + kFormat + "'");
    if (!f.has_attr("format_version") || f.attr_int("format_version") != kFormatVersion)
      throw ApproxUnitsError(f.where() + ": attribute 'format_version' must be 1");
    if (const std::string s = read_attr(f, "structure"); s != kApproxStructure)
      throw ApproxUnitsError(f.where() + ": structure '" + printable(s) +
                             "' is not the one this model implements ('" + kApproxStructure + "')");
    const std::string arch = read_attr(f, "arch");
    if (const std::string why = arch_problem(arch); !why.empty())
      throw ApproxUnitsError(f.where() + ": attribute 'arch' = " + why);
    const std::vector<int8_t> rcp = read_delta(f, kRcpDataset, kRcpEntries);
    const std::vector<int8_t> sqrt = read_delta(f, kSqrtDataset, kSqrtEntries);
    if (tables_sha256(rcp, sqrt) != read_attr(f, "tables_sha256"))
      throw ApproxUnitsError(f.where() + ": the tables do not match attribute tables_sha256 "
                             "(corrupt or edited file)");
    try {
      return ApproxUnits::from_deltas(arch, rcp, sqrt);
    } catch (const std::invalid_argument& e) {
      throw ApproxUnitsError(f.where() + ": " + e.what());
    }
  } catch (const h5::Error& e) {
    throw ApproxUnitsError(e.what());
  }
}

std::string find_approx_units(const std::string& arch) {
  if (const std::string why = arch_problem(arch); !why.empty())
    throw ApproxUnitsError("approximate units arch " + why);
  const std::vector<std::string> tried = data_file_candidates("hw/" + arch + "/approx.h5");
  for (const std::string& p : tried)
    if (fs::is_regular_file(p)) return p;
  std::string msg = "no approximate-unit tables for arch '" + arch + "' (looked in:";
  for (const std::string& p : tried) msg += " " + p;
  msg += "). Measure them on a GPU of that architecture with harness/gpu/approx_explore.cu and "
         "convert with `tqref calibrate approx --from-raw DIR`; see docs/approx-units.md";
  throw ApproxUnitsError(msg);
}

void save_approx_units(const std::string& path, const std::string& arch,
                       const std::vector<int8_t>& rcp_delta, const std::vector<int8_t>& sqrt_delta,
                       const ApproxProvenance& prov, bool force) {
  if (fs::exists(path) && !force)
    throw ApproxUnitsError(path + " exists; not overwriting it (pass --force to replace it, or "
                           "--out PATH)");
  ApproxUnits::from_deltas(arch, rcp_delta, sqrt_delta);  // the structure's ranges, before writing
  if (!fs::path(path).parent_path().empty()) fs::create_directories(fs::path(path).parent_path());
  h5::write_file_atomic(
      path,
      [&](const h5::Node& f) {
        f.set_attr("format", std::string(kFormat));
        f.set_attr("format_version", kFormatVersion);
        f.set_attr("arch", arch);
        f.set_attr("structure", std::string(kApproxStructure));
        f.set_attr("structure_rules", std::string(kStructureRules));
        f.set_attr("tables_sha256", tables_sha256(rcp_delta, sqrt_delta));
        f.set_attr("device_name", prov.device_name);
        f.set_attr("driver_version", prov.driver_version);
        f.set_attr("cuda_version", prov.cuda_version);
        f.set_attr("measured_date", prov.measured_date);
        f.set_attr("measured_by", prov.measured_by);
        f.set_attr("regenerate_command", prov.regenerate_command);
        f.write(kRcpDataset, rcp_delta, {kRcpEntries},
                "R_bits[m] = bits(1.0f / (1 + m * 2^-23)) + delta[m], m in [0, 2^23)");
        f.write(kSqrtDataset, sqrt_delta, {kSqrtEntries},
                "S_bits[i] = bits(sqrtf(x)) + delta[i], x of bits 0x3F800000 + i, in [1, 4)");
      },
      // Read back whole: the loader checks both tables against tables_sha256, which was computed
      // from the deltas given here, and the structure's ranges.
      [&](const std::string& temp) { load_approx_units(temp); });
}

namespace {
std::shared_ptr<const ApproxUnits> load_installed() {
  return std::make_shared<const ApproxUnits>(load_approx_units(find_approx_units(kApproxArch)));
}
}  // namespace

void install_approx_units_source() { set_approx_units_source(&load_installed); }

namespace {
// Installed wherever this file is linked (coverage and pinning call approx_units_present), so
// tests and the Python library need no call of their own. Safe at static initialization: the
// model's registry is constant-initialized.
const bool g_installed = (install_approx_units_source(), true);
}  // namespace

bool approx_units_present() {
  for (const std::string& p : data_file_candidates(std::string("hw/") + kApproxArch + "/approx.h5"))
    if (fs::is_regular_file(p)) return true;
  return false;
}

}  // namespace tqref
