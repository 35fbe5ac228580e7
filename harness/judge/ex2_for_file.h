// The EX2 profile a golden file's decode cases were generated with, found by the arch prefix of
// its ex2_profile_id ("sm_90-ex2-v1-<hash>") and checked against that id.
#pragma once
#include <optional>
#include <string>

#include "io/case_io.h"
#include "tqref/ex2.h"

namespace tqref::golden {

// nullopt when the file names no profile (writer-only files). Throws BadCase when the profile
// cannot be found or its id differs from the file's.
std::optional<Ex2Profile> ex2_for_file(const Provenance& prov, const std::string& file);

}  // namespace tqref::golden
