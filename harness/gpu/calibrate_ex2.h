// `tqref calibrate ex2` on a device, as a function: what the command and `tqref conform
// --calibrate` run (docs/ex2.md). Measures the device's MUFU.EX2 unit (ex2_calibration.h),
// checks the model against every result and writes the profile.
#pragma once
#include <string>

#include "io/ex2_profile_store.h"

namespace tqref::gpu {

struct CalibrateEx2Options {
  int device = 0;
  std::string arch = "auto";  // or the architecture the device must have
  std::string out;            // "" = where the loader looks first: data_dir()/hw/<arch>/ex2.h5
  bool force = false;         // replace an existing profile
  Ex2Store store = Ex2Store::automatic;
  std::string raw_out;        // also the measured F[0 .. 2^23] as raw uint32 LE ("" = no)
  std::string command_line;   // recorded in the profile's provenance
};

// Prints progress, the result per input class and the comparison with the stored profile to
// stdout, problems to stderr. Returns an exit code (io/exit_code.h): 0 the profile is written;
// 1 the hardware does not fit the model (nothing written); 2 --arch is not the device's; 3 the
// output exists (without force) or cannot be written. Throws gpu::Error for a driver failure.
int calibrate_ex2(const CalibrateEx2Options& o);

}  // namespace tqref::gpu
