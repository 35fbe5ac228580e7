#include "io/ex2_profile_io.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include "io/data_dir.h"
#include "io/hdf5_util.h"
#include "io/text_escape.h"

namespace tqref {

namespace {

constexpr const char* kFormat = "tqref-ex2-profile";
constexpr int64_t kFormatVersion = 2;  // version 1 (table only) is still read
constexpr const char* kDeltaDataset = "fraction_delta";

constexpr const char* kStructureRules =
    "x NaN (any sign, any payload) -> 0x7FFFFFFF; x = -0.0, +0.0 or subnormal -> 1.0 (0x3F800000); "
    "x in [-1, 0) normal -> F[trunc(-x * 2^23)]; x in [-126, -1) -> 2^ceil(x) * F[-(x - ceil(x)) * "
    "2^23] (exact scaling; 1.0 * 2^x for integer x); x < -126 and -Inf -> +0.0; "
    "F[k] = EX2(-k * 2^-23), k in [0, 2^23], F[0] = 1.0, F[2^23] = 0.5";

constexpr const char* kReferenceText =
    "ref(k) = float(A[k >> 11] * B[k & 2047]) in IEEE double, A[h] = product of c[11 + j] over set "
    "bits j of h, B[l] = product of c[j] over set bits j of l (increasing j, starting from 1.0), "
    "c[22] = sqrt(0.5), c[j - 1] = sqrt(c[j]), c[23] = 0.5; see ex2_reference_table() in "
    "harness/io/ex2_profile_io.cpp";

bool file_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string read_attr(const h5::Node& f, const char* name) {
  if (!f.has_attr(name)) throw Ex2ProfileError(f.where() + ": attribute '" + name + "' missing");
  return f.attr_string(name);
}

constexpr const char* kDatapathDataset = "datapath_coefficients";

constexpr const char* kDatapathSteps =
    "k = 0 -> 1.0, k = 2^23 -> 0.5; else jp = ~k & 0x7FFFFF, seg = jp >> 17, X = jp & 0x1FFFF; "
    "S = (sum of the bits of the folded partial-product array of X^2 (X_i at column 2i, X_i*X_j "
    "for i < j at column i + j + 1) in columns >= datapath_cut) >> datapath_cut; "
    "Y = C0 * 2^13 + datapath_bias + C1 * X + C2 * S (full precision, units 2^-38); "
    "F[k] bits = 0x3F000000 | (Y >> 15). Rows (C0, C1, C2) of datapath_coefficients by seg; "
    "see tqref/ex2_datapath.h";

void write_table(const h5::Node& file, const std::string& path, const std::vector<uint32_t>& f) {
  const std::vector<uint32_t>& ref = ex2_reference_table();
  std::vector<int8_t> delta(f.size());
  for (size_t k = 0; k < f.size(); ++k) {
    int64_t d = int64_t(f[k]) - int64_t(ref[k]);
    if (d < -128 || d > 127)
      throw Ex2ProfileError(path + ": F[" + std::to_string(k) + "] is " + std::to_string(d) +
                            " ulp from the reference; the int8 delta encoding allows [-128, 127]");
    delta[k] = static_cast<int8_t>(d);
  }
  file.set_attr("reference", std::string(kReferenceText));
  file.write(kDeltaDataset, delta, {f.size()},
             "F_bits[k] = reference_bits(k) + delta[k], k in [0, 2^23]; F[k] = EX2(-k * 2^-23)");
}

void write_datapath(const h5::Node& file, const Ex2Datapath& d) {
  std::vector<uint32_t> rows;
  for (const Ex2Segment& s : d.seg) rows.insert(rows.end(), {s.c0, s.c1, s.c2});
  file.set_attr("datapath_family", std::string(kEx2DatapathFamily));
  file.set_attr("datapath_cut", int64_t(d.cut));
  file.set_attr("datapath_bias", int64_t(d.bias));
  file.set_attr("datapath_steps", std::string(kDatapathSteps));
  file.write(kDatapathDataset, rows, {kEx2Segments, 3},
             "row seg: C0 (value C0 * 2^-25), C1 (C1 * 2^-15), C2 (C2 * 2^-11 at cut 19)");
}

std::vector<uint32_t> read_table(const h5::Node& f) {
  std::vector<uint64_t> shape{kEx2FractionEntries};
  std::vector<int8_t> delta;
  try {
    delta = f.read<int8_t>(kDeltaDataset, &shape);
  } catch (const h5::Error& e) {
    throw Ex2ProfileError(std::string(e.what()) + " (expected int8 [" +
                          std::to_string(kEx2FractionEntries) + "], 2^23 + 1 entries)");
  }
  std::vector<uint32_t> frac = ex2_reference_table();
  for (size_t k = 0; k < frac.size(); ++k) frac[k] = uint32_t(int64_t(frac[k]) + delta[k]);
  return frac;
}

Ex2Datapath read_datapath(const h5::Node& f) {
  const std::string family = read_attr(f, "datapath_family");
  if (family != kEx2DatapathFamily)
    throw Ex2ProfileError(f.where() + ": attribute 'datapath_family' is '" + printable(family) +
                          "'; this model implements '" + kEx2DatapathFamily + "'");
  Ex2Datapath d;
  const int64_t cut = f.attr_int("datapath_cut"), bias = f.attr_int("datapath_bias");
  if (cut < int64_t(kEx2MinCut) || cut > int64_t(kEx2MaxCut))
    throw Ex2ProfileError(f.where() + ": attribute 'datapath_cut' = " + std::to_string(cut) +
                          "; allowed: [" + std::to_string(kEx2MinCut) + ", " +
                          std::to_string(kEx2MaxCut) + "]");
  if (bias < 0 || bias >= (int64_t(1) << kEx2C0Shift))
    throw Ex2ProfileError(f.where() + ": attribute 'datapath_bias' = " + std::to_string(bias) +
                          "; allowed: [0, 2^13)");
  d.cut = uint32_t(cut);
  d.bias = uint32_t(bias);
  std::vector<uint64_t> shape{kEx2Segments, 3};
  std::vector<uint32_t> rows;
  try {
    rows = f.read<uint32_t>(kDatapathDataset, &shape);
  } catch (const h5::Error& e) {
    throw Ex2ProfileError(std::string(e.what()) + " (expected uint32 [64, 3]: C0, C1, C2 per segment)");
  }
  for (uint32_t s = 0; s < kEx2Segments; ++s) d.seg[s] = {rows[3 * s], rows[3 * s + 1], rows[3 * s + 2]};
  if (const std::string why = ex2_datapath_problem(d); !why.empty())
    throw Ex2ProfileError(f.where(kDatapathDataset) + ": " + why);
  return d;
}

}  // namespace

std::string arch_problem(const std::string& arch) {
  size_t digits = 0;
  while (3 + digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[3 + digits]))) ++digits;
  const size_t rest = arch.size() - std::min(arch.size(), 3 + digits);
  const bool ok = arch.rfind("sm_", 0) == 0 && digits >= 2 && digits <= 4 &&
                  (rest == 0 || (rest == 1 && std::islower(static_cast<unsigned char>(arch.back()))));
  if (ok) return "";
  return "'" + printable(arch) + "'; allowed: sm_ then 2 to 4 digits and an optional lower-case letter (sm_90, sm_121)";
}

std::string ex2_profile_id_problem(const std::string& id) {
  const size_t dash = id.find("-ex2-v1-");
  bool ok = dash != std::string::npos && arch_problem(id.substr(0, dash)).empty() && id.size() == dash + 8 + 12;
  for (size_t i = dash + 8; ok && i < id.size(); ++i) ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f');
  if (ok) return "";
  return "'" + printable(id) + "'; allowed: <arch>-ex2-v1-<12 hex digits> (e.g. sm_90-ex2-v1-b16c2a8bd78f)";
}

namespace {

std::vector<uint32_t> compute_reference_table() {
  double c[24];
  c[23] = 0.5;
  c[22] = std::sqrt(0.5);  // IEEE sqrt is correctly rounded: deterministic
  for (int j = 22; j > 0; --j) c[j - 1] = std::sqrt(c[j]);
  // A covers k >> 11 in [0, 4096] (bit 12 of h is c[23] = 2^-1); B covers k & 2047.
  std::vector<double> a(4097), b(2048);
  for (uint32_t h = 0; h <= 4096; ++h) {
    double p = 1.0;
    for (int j = 0; j < 13; ++j)
      if (h >> j & 1u) p = p * c[11 + j];
    a[h] = p;
  }
  for (uint32_t l = 0; l < 2048; ++l) {
    double p = 1.0;
    for (int j = 0; j < 11; ++j)
      if (l >> j & 1u) p = p * c[j];
    b[l] = p;
  }
  std::vector<uint32_t> r(kEx2FractionEntries);
  for (uint32_t k = 0; k < kEx2FractionEntries; ++k) {
    float v = static_cast<float>(a[k >> 11] * b[k & 2047u]);
    std::memcpy(&r[k], &v, 4);
  }
  return r;
}

}  // namespace

const std::vector<uint32_t>& ex2_reference_table() {
  static const std::vector<uint32_t> table = compute_reference_table();
  return table;
}

std::string ex2_table_hash(const std::vector<uint32_t>& frac_bits) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint32_t v : frac_bits)
    for (int i = 0; i < 4; ++i) {
      h ^= (v >> (8 * i)) & 0xFFu;
      h *= 0x100000001B3ull;
    }
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(h));
  return s;
}

std::string ex2_profile_id(const std::string& arch, const std::vector<uint32_t>& frac_bits) {
  return arch + "-ex2-v1-" + ex2_table_hash(frac_bits).substr(0, 12);
}

void save_ex2_profile(const std::string& path, const Ex2Profile& p, const Ex2Provenance& prov) {
  const std::vector<uint32_t> f = p.fraction_table();
  h5::write_file_atomic(path, [&](const h5::Node& file) {
    file.set_attr("format", std::string(kFormat));
    file.set_attr("format_version", kFormatVersion);
    file.set_attr("profile_id", p.id());
    file.set_attr("arch", p.arch());
    file.set_attr("structure", std::string(kEx2Structure));
    file.set_attr("structure_rules", std::string(kStructureRules));
    file.set_attr("table_fnv1a64", ex2_table_hash(f));
    file.set_attr("fraction_model", std::string(p.datapath() ? "datapath" : "table"));
    file.set_attr("device_name", prov.device_name);
    file.set_attr("driver_version", prov.driver_version);
    file.set_attr("cuda_version", prov.cuda_version);
    file.set_attr("measured_date", prov.measured_date);
    file.set_attr("measured_by", prov.measured_by);
    file.set_attr("regenerate_command", prov.regenerate_command);
    file.set_attr("fraction_note", prov.fraction_note);
    if (p.datapath())
      write_datapath(file, *p.datapath());
    else
      write_table(file, path, f);
  }, [&](const std::string& temp) {
    // Read back before publishing: the file must decode to the very fraction map that was
    // measured, in the same stored form.
    const Ex2Profile back = load_ex2_profile(temp);
    if (back.fraction_table() != f || back.id() != p.id() || back.datapath() != p.datapath())
      throw Ex2ProfileError(path + ": the written profile does not read back to the measured table");
  });
}

Ex2Provenance read_ex2_provenance(const std::string& path) {
  h5::Node f = h5::Node::open_file(path);
  return {read_attr(f, "device_name"), read_attr(f, "driver_version"),
          read_attr(f, "cuda_version"), read_attr(f, "measured_date"),
          read_attr(f, "measured_by"),  read_attr(f, "regenerate_command"),
          f.has_attr("fraction_note") ? f.attr_string("fraction_note") : ""};
}

Ex2Profile load_ex2_profile(const std::string& path) {
  try {
    h5::Node f = h5::Node::open_file(path);
    if (read_attr(f, "format") != kFormat)
      throw Ex2ProfileError(f.where() + ": attribute 'format' is '" + printable(f.attr_string("format")) +
                            "'; expected '" + kFormat + "'");
    const int64_t version = f.has_attr("format_version") ? f.attr_int("format_version") : 0;
    if (version != 1 && version != kFormatVersion)
      throw Ex2ProfileError(f.where() + ": attribute 'format_version' must be 1 or 2");
    const std::string structure = read_attr(f, "structure");
    if (structure != kEx2Structure)
      throw Ex2ProfileError(f.where() + ": structure '" + printable(structure) + "' is not the one this model "
                            "implements ('" + kEx2Structure + "')");
    const std::string arch = read_attr(f, "arch"), id = read_attr(f, "profile_id");
    if (const std::string why = arch_problem(arch); !why.empty())
      throw Ex2ProfileError(f.where() + ": attribute 'arch' = " + why);
    const std::string model = version == 1 ? "table" : read_attr(f, "fraction_model");
    if (model != "table" && model != "datapath")
      throw Ex2ProfileError(f.where() + ": attribute 'fraction_model' is '" + printable(model) +
                            "'; allowed: 'datapath' or 'table'");
    std::optional<Ex2Datapath> d;
    if (model == "datapath") d = read_datapath(f);
    std::vector<uint32_t> frac = d ? ex2_datapath_table(*d) : read_table(f);
    const std::string hash = ex2_table_hash(frac);
    const char* dataset = d ? kDatapathDataset : kDeltaDataset;
    if (hash != read_attr(f, "table_fnv1a64") || id != ex2_profile_id(arch, frac))
      throw Ex2ProfileError(f.where(dataset) + ": decoded table hash " + hash +
                            " does not match attributes table_fnv1a64 / profile_id '" + id +
                            "' (corrupt or edited file)");
    try {
      return d ? Ex2Profile::from_datapath(id, arch, *d)
               : Ex2Profile::from_table(id, arch, std::move(frac));
    } catch (const std::invalid_argument& e) {
      throw Ex2ProfileError(f.where(dataset) + ": " + e.what());
    }
  } catch (const h5::Error& e) {
    throw Ex2ProfileError(e.what());
  }
}

namespace {
std::map<std::string, std::string>& preferred_profiles() {
  static std::map<std::string, std::string> m;
  return m;
}
}  // namespace

void prefer_ex2_profile(const std::string& arch, const std::string& path) {
  preferred_profiles()[arch] = path;
}

std::string find_ex2_profile(const std::string& arch) {
  if (const std::string why = arch_problem(arch); !why.empty()) throw Ex2ProfileError("EX2 profile arch " + why);
  if (const auto it = preferred_profiles().find(arch); it != preferred_profiles().end()) return it->second;
  const std::vector<std::string> tried = data_file_candidates("hw/" + arch + "/ex2.h5");
  for (const auto& p : tried)
    if (file_exists(p)) return p;
  std::string msg = "no EX2 profile for arch '" + arch + "' (looked in:";
  for (const auto& p : tried) msg += " " + p;
  msg += "). Measure one on a GPU of that architecture with `tqref calibrate ex2` (it writes "
         "the first of these places, where later runs find it); see docs/ex2.md";
  throw Ex2ProfileError(msg);
}

Ex2Profile load_ex2_profile_for_arch(const std::string& arch) {
  const std::string path = find_ex2_profile(arch);
  Ex2Profile p = load_ex2_profile(path);
  if (p.arch() != arch)
    throw Ex2ProfileError(path + ": attribute 'arch' is '" + p.arch() + "'; expected '" + arch + "'");
  return p;
}

}  // namespace tqref
