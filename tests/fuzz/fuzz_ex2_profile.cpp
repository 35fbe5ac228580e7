// libFuzzer target: EX2 hardware profiles (harness/io/ex2_profile_io.h, data/hw/<arch>/ex2.h5)
// from arbitrary bytes. load_ex2_profile must refuse the file with Ex2ProfileError (exit 3 in the
// CLI) or return a profile whose table has 2^23 + 1 entries and hashes to its id (the loader
// checks both; the target checks them again), and read_ex2_provenance must refuse or return.
// Any other exception, crash or sanitizer report is a finding. The validating pass runs in this
// process (fuzz_common.h).
#include <cstdlib>

#include "fuzz_common.h"
#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"

using namespace tqref;

TQREF_FUZZ_VALIDATE_IN_PROCESS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_path(".ex2.h5");
  if (!fuzz::write_input(path, data, size)) std::abort();
  try {
    const Ex2Profile p = load_ex2_profile(path);
    if (p.fraction_table().size() != kEx2FractionEntries || p.id() != ex2_profile_id(p.arch(), p.fraction_table()))
      std::abort();  // the loader returned a table it did not check
  } catch (const Ex2ProfileError& e) {
    fuzz::refused(e.what());
  }
  try {
    read_ex2_provenance(path);
  } catch (const h5::Error& e) {
    fuzz::refused(e.what());
  }
  return 0;
}
