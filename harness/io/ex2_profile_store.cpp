#include "io/ex2_profile_store.h"

#include <cstdio>
#include <filesystem>

#include "io/atomic_output.h"
#include "io/data_dir.h"
#include "io/exit_code.h"

namespace fs = std::filesystem;

namespace tqref {

bool parse_ex2_store(const std::string& s, Ex2Store* store) {
  if (s != "auto" && s != "table") return false;
  *store = s == "auto" ? Ex2Store::automatic : Ex2Store::table;
  return true;
}

namespace {

// The datapath when a member of the family reproduces every entry, else the table; with
// Ex2Store::table always the table. Records what the fit found in prov.fraction_note.
Ex2Profile profile_for_table(Ex2Store store, const std::string& arch, const std::vector<uint32_t>& f,
                             const Ex2FitResult& fit, Ex2Provenance& prov) {
  const std::string id = ex2_profile_id(arch, f);
  if (store == Ex2Store::table) {
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
  prov.fraction_note = std::string("measured table: no member of ") + kEx2DatapathFamily +
                       " reproduces it (" + fit.summary + ")";
  return Ex2Profile::from_table(id, arch, f);
}

std::string fit_report(Ex2Store store, const Ex2FitResult& fit) {
  char head[96];
  std::snprintf(head, sizeof head, " (%s, %.2f s):\n", kEx2DatapathFamily, fit.seconds);
  std::string r = "datapath fit";
  r += head;
  r += fit.summary;
  if (store == Ex2Store::table) r += "--store table: storing the measured table\n";
  else if (!fit.datapath) r += "no member of the datapath family reproduces this table: storing the table\n";
  return r;
}

std::string store_ex2_profile(const std::string& out, bool force, const Ex2Profile& p,
                              const Ex2Provenance& prov) {
  if (fs::exists(out) && !force)
    throw Ex2ProfileError(out + " exists; not overwriting it (pass --force to replace it, or --out PATH)");
  const fs::path parent = fs::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (const std::string why = common::output_path_problem(out); !why.empty())
    throw Ex2ProfileError("--out " + why);
  save_ex2_profile(out, p, prov);  // read back before it is renamed into place
  return "wrote " + out + " (profile " + p.id() + ", " +
         (p.datapath() ? "datapath coefficients" : "fraction table") + ", " +
         std::to_string(fs::file_size(out)) + " bytes)";
}

}  // namespace

std::string default_ex2_profile_path(const std::string& arch) {
  return data_dir() + "/hw/" + arch + "/ex2.h5";
}

int store_measured_profile(Ex2Store store, bool force, const std::string& arch,
                           const std::vector<uint32_t>& f, const Ex2FitResult& fit,
                           Ex2Provenance& prov, const std::string& out) {
  std::printf("%s", fit_report(store, fit).c_str());
  const Ex2Profile p = profile_for_table(store, arch, f, fit, prov);
  try {
    std::printf("%s\n", store_ex2_profile(out, force, p, prov).c_str());
  } catch (const Ex2ProfileError& e) {
    std::fprintf(stderr, "tqref calibrate ex2: %s\n", e.what());
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace tqref
