// The EX2 profile a golden file's decode cases were generated with, found by the arch prefix of
// its ex2_profile_id ("sm_90-ex2-v1-<hash>") and checked against that id.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "io/case_io.h"
#include "tqref/ex2.h"

namespace tqref::judge {

// nullopt when the file names no profile (writer-only files). Throws BadCase when the profile
// cannot be found or its id differs from the file's.
std::optional<Ex2Profile> ex2_for_file(const golden::Provenance& prov, const std::string& file);

// Every EX2 unit tqref knows, loaded once: the profile of each architecture found under the data
// folders (hw/<arch>/ex2.h5, data_dir.h search order; unreadable ones are left out) and the
// reference table (a correctly rounded 2^x, ex2_reference_table()). The failure anatomy tries each
// as the "another EX2 profile" hypothesis.
const std::vector<Ex2Profile>& known_ex2_units();

}  // namespace tqref::judge
