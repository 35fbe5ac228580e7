// The one search policy for tqref's data (EX2 profiles, golden suite files): $TQREF_DATA_DIR
// when it is set and not empty, then the source tree's data/ folder (compiled in). Readers try
// the candidates in that order; writers of new data put it in data_dir().
#pragma once
#include <string>
#include <vector>

namespace tqref {

// The source tree's data/ folder, as the build saw it.
std::string source_data_dir();
// $TQREF_DATA_DIR, or source_data_dir() when it is unset or empty: where new data goes so that
// later runs find it.
std::string data_dir();
// `relative` (e.g. "hw/sm_90/ex2.h5") under each searched folder, in search order.
std::vector<std::string> data_file_candidates(const std::string& relative);

}  // namespace tqref
