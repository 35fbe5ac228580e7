// Where the golden files of the named suites live: $TQREF_DATA_DIR/golden/<name>.h5, then the
// source tree's data/golden/<name>.h5 (smoke and real are committed there; standard is generated
// by `tqref generate --suite standard` and is not). A PATH.h5 item is taken as given.
#pragma once
#include <string>
#include <vector>

namespace tqref::conform {

struct SuiteFile {
  std::string name;           // "smoke", "standard", "real" or the path given
  std::string path;           // found file, "" when none
  std::vector<std::string> looked_in;  // candidates tried, for the error message
};

SuiteFile find_suite_file(const std::string& item);

// The source tree's data/ folder (compiled in), and $TQREF_DATA_DIR or else that folder: where new
// data (an EX2 profile from --calibrate) goes so that later runs find it.
std::string source_data_dir();
std::string data_dir();

}  // namespace tqref::conform
