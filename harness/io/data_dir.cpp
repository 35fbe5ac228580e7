#include "io/data_dir.h"

#include <cstdlib>

#ifndef TQREF_SOURCE_DATA_DIR
#error "TQREF_SOURCE_DATA_DIR (the source tree's data/ folder) must be defined by the build"
#endif

namespace tqref {

namespace {

const char* env_data_dir() {
  const char* d = std::getenv("TQREF_DATA_DIR");
  return d && *d ? d : nullptr;
}

}  // namespace

std::string source_data_dir() { return TQREF_SOURCE_DATA_DIR; }

std::string data_dir() {
  const char* d = env_data_dir();
  return d ? d : source_data_dir();
}

std::vector<std::string> data_file_candidates(const std::string& relative) {
  std::vector<std::string> c;
  if (const char* d = env_data_dir()) c.push_back(std::string(d) + "/" + relative);
  c.push_back(source_data_dir() + "/" + relative);
  return c;
}

}  // namespace tqref
