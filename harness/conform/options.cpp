#include "conform/options.h"

#include <algorithm>
#include <filesystem>

namespace tqref::conform {

namespace {

bool names_module(const std::string& key, const ModuleFile& f) {
  const std::filesystem::path p(f.path);
  return key == f.path || key == p.filename().string() || key == p.stem().string();
}

}  // namespace

std::map<std::string, uint32_t> parse_hdim_args(const std::vector<std::string>& args) {
  std::map<std::string, uint32_t> out;
  for (const std::string& a : args) {
    const size_t eq = a.rfind('=');
    const std::string key = eq == std::string::npos ? "" : a.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (key.empty() || (val != "128" && val != "256"))
      throw OptionError("--hdim " + a + ": expected MODULE=128 or MODULE=256 (MODULE: the module's "
                        "path, file name or file name without its suffix)");
    const uint32_t h = val == "128" ? 128 : 256;
    const auto [it, fresh] = out.emplace(key, h);
    if (!fresh && it->second != h)
      throw OptionError("--hdim " + key + " given twice, as " + std::to_string(it->second) + " and " +
                        std::to_string(h));
  }
  return out;
}

uint32_t hdim_for(const std::map<std::string, uint32_t>& hdims, const ModuleFile& f) {
  uint32_t h = 0;
  for (const auto& [key, v] : hdims) {
    if (!names_module(key, f)) continue;
    if (h != 0 && h != v)
      throw OptionError("--hdim gives module " + f.path + " both 128 and 256 (through different names)");
    h = v;
  }
  return h;
}

void check_hdim_names(const std::map<std::string, uint32_t>& hdims, const std::vector<ModuleFile>& all) {
  for (const auto& [key, v] : hdims) {
    bool any = false;
    for (const auto& f : all) any = any || names_module(key, f);
    if (!any)
      throw OptionError("--hdim " + key + "=" + std::to_string(v) + ": no module given to --modules "
                        "has this path, file name or stem");
  }
}

bool is_named_suite(const std::string& s) {
  return s == "smoke" || s == "standard" || s == "real" || is_generated_suite(s);
}
bool is_generated_suite(const std::string& s) {
  return s == "standard" || s == "models" || s == "pools" || s == "flags";
}

std::vector<std::string> parse_suites(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const bool h5 = item.size() > 3 && item.compare(item.size() - 3, 3, ".h5") == 0;
    if (item.empty() || (!is_named_suite(item) && !h5))
      throw OptionError("--suites '" + s + "': item '" + item + "'; allowed: smoke, standard, real, models, pools, flags, "
                        "or a golden file PATH.h5, comma-separated");
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace tqref::conform
