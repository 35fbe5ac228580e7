#include "conform/suite_files.h"

#include <cstdlib>
#include <filesystem>

#include "conform/options.h"

#ifndef TQREF_SOURCE_DATA_DIR
#error "TQREF_SOURCE_DATA_DIR (the source tree's data/ folder) must be defined by the build"
#endif

namespace tqref::conform {

std::string source_data_dir() { return TQREF_SOURCE_DATA_DIR; }

std::string data_dir() {
  const char* d = std::getenv("TQREF_DATA_DIR");
  return d && *d ? d : source_data_dir();
}

SuiteFile find_suite_file(const std::string& item) {
  SuiteFile f;
  f.name = item;
  if (!is_named_suite(item)) {
    f.looked_in.push_back(item);
  } else {
    if (const char* d = std::getenv("TQREF_DATA_DIR"); d && *d)
      f.looked_in.push_back(std::string(d) + "/golden/" + item + ".h5");
    f.looked_in.push_back(std::string(TQREF_SOURCE_DATA_DIR) + "/golden/" + item + ".h5");
  }
  for (const auto& p : f.looked_in) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) {
      f.path = p;
      break;
    }
  }
  return f;
}

}  // namespace tqref::conform
