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

// The profile of the measured table f of `arch` with its datapath fit; records what the fit found
// in prov.fraction_note.
Ex2Profile profile_for_table(Ex2Store store, const std::string& arch, const std::vector<uint32_t>& f,
                             const Ex2FitResult& fit, Ex2Provenance& prov);

// What profile_for_table decides for this fit, as `tqref calibrate ex2` prints it (lines ending
// in a newline).
std::string fit_report(Ex2Store store, const Ex2FitResult& fit);

// Writes p to `out` (its directory created) through a temporary and a rename, so a failed run
// never leaves half a profile; an existing file (possibly a committed profile) is replaced only
// with `force`. Throws Ex2ProfileError naming the file. Returns what was written, one line.
std::string store_ex2_profile(const std::string& out, bool force, const Ex2Profile& p,
                              const Ex2Provenance& prov);

}  // namespace tqref
