#include "judge/ex2_for_file.h"

#include "io/ex2_profile_io.h"

namespace tqref::golden {

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

}  // namespace tqref::golden
