// A measured EX2 fraction table made into a stored profile (docs/ex2.md): what `tqref calibrate
// ex2` and `tqref conform --calibrate` write.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/ex2_profile_io.h"
#include "tqref/ex2_fit.h"

namespace tqref {

// What a profile stores: the datapath's coefficients when a member of the family reproduces
// every entry, else the table (automatic); or always the measured table (the ground truth the
// datapath is tested against).
enum class Ex2Store { automatic, table };
// "auto" or "table"; false for anything else.
bool parse_ex2_store(const std::string& s, Ex2Store* store);

// The profile of the measured table f of `arch` with its datapath fit (its fraction note in
// prov), written to `out` (its directory created) through a temporary and a rename, so a failed
// run never leaves half a profile; an existing file (possibly a committed profile) is replaced
// only with `force`. Prints what the fit found and what was written to stdout, a problem to
// stderr; returns kExitOk, or kExitBadInput when nothing was written (io/exit_code.h).
// Where a new profile for `arch` goes so that later runs find it (io/data_dir.h):
// data_dir()/hw/<arch>/ex2.h5.
std::string default_ex2_profile_path(const std::string& arch);

int store_measured_profile(Ex2Store store, bool force, const std::string& arch,
                           const std::vector<uint32_t>& f, const Ex2FitResult& fit,
                           Ex2Provenance& prov, const std::string& out);

}  // namespace tqref
