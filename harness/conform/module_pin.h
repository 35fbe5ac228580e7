// What a module does differently, across every case it ran (docs/variants.md, "Pinning"): the
// hypotheses that reproduce each of its failing cases bit for bit (anatomy/hypotheses.h names them
// per case), and, for those that are variants of the contract, whether they also leave every
// passing case of the module's kernels as the contract has it (the CPU model on the suite files
// again). A case-level tie is often broken here: a rival that reproduces the failures but would
// have changed a case the module passed is refuted.
#pragma once
#include <string>
#include <vector>

#include "conform/result.h"

namespace tqref::conform {

struct ModulePin {
  uint64_t failing = 0;                      // failing cases with a hypothesis verdict
  std::vector<std::string> reproduce_all;    // hypotheses reproducing every failing case
  std::vector<std::string> consistent;       // variants among them that change no passing case
  std::vector<std::string> refuted;          // "<variant> (changes passing case <suite>/<case>)"
  std::vector<std::string> unchecked;        // reproducing hypotheses that are no variant (a mutant's
                                             // model): the passing cases cannot refute them
  std::string verdict;                       // one line for the reports ("" = no failing case)
};

ModulePin pin_module(const ModuleResult& m);

}  // namespace tqref::conform
