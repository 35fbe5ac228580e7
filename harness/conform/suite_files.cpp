#include "conform/suite_files.h"

#include <cstdlib>
#include <filesystem>

#include "conform/options.h"
#include "io/case_io.h"
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

void open_suite_files(std::vector<SuiteFile>& suites) {
  for (SuiteFile& s : suites) {
    if (s.path.empty()) continue;
    try {
      s.opened = std::make_shared<const h5::Node>(golden::open_golden_file(s.path));
    } catch (const std::exception&) {
      s.opened.reset();  // run_suite opens it again and reports the error for each module
    }
  }
}

}  // namespace tqref::conform
