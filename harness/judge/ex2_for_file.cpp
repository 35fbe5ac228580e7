#include "judge/ex2_for_file.h"

#include <filesystem>
#include <set>

#include "io/data_dir.h"
#include "io/ex2_profile_io.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

std::optional<Ex2Profile> ex2_for_file(const Provenance& prov, const std::string& file) {
  const std::string& id = prov.ex2_profile_id;
  if (id.empty()) return std::nullopt;
  const size_t dash = id.find("-ex2-");
  if (dash == std::string::npos)
    throw BadCase(file + ": attribute ex2_profile_id = '" + id + "'; expected <arch>-ex2-v1-<hash>");
  Ex2Profile p = [&] {
    try {
      return load_ex2_profile_for_arch(id.substr(0, dash));
    } catch (const std::exception& e) {
      throw BadCase(file + ": needs EX2 profile " + id + ": " + e.what());
    }
  }();
  if (p.id() != id)
    throw BadCase(file + ": generated with EX2 profile " + id + " but the installed " +
                  id.substr(0, dash) + " profile is " + p.id() + "; regenerate the file or install that profile");
  return p;
}

const std::vector<Ex2Profile>& known_ex2_units() {
  static const std::vector<Ex2Profile> units = [] {
    namespace fs = std::filesystem;
    std::vector<Ex2Profile> v;
    std::set<std::string> archs;
    for (const std::string& hw : data_file_candidates("hw")) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(hw, ec))
        if (e.is_directory(ec) && fs::exists(e.path() / "ex2.h5", ec)) archs.insert(e.path().filename().string());
    }
    for (const std::string& arch : archs) {
      try {
        v.push_back(load_ex2_profile_for_arch(arch));
      } catch (const std::exception&) {  // a broken profile is not a hypothesis
      }
    }
    v.push_back(Ex2Profile::from_table("reference-ex2", "reference", ex2_reference_table()));
    return v;
  }();
  return units;
}

}  // namespace tqref::judge
