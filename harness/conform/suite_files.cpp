#include "conform/suite_files.h"

#include <cstdlib>
#include <filesystem>

#include "conform/options.h"
#include "io/data_dir.h"

namespace tqref::conform {

SuiteFile find_suite_file(const std::string& item) {
  SuiteFile f;
  f.name = item;
  if (!is_named_suite(item)) {
    f.looked_in.push_back(item);
  } else {
    f.looked_in = data_file_candidates("golden/" + item + ".h5");
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
