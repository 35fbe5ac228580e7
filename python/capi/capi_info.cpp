// Build facts and errors behind the C ABI.
#include <omp.h>

#include <cstdlib>

#include "capi_call.h"
#include "io/report_doc.h"
#include "tqref/build_info.h"
#include "tqref/format.h"
#include "tqref/numeric.h"

extern "C" {

int tqref_abi_version(void) { return TQREF_C_ABI_VERSION; }

const char* tqref_build_info(void) {
  static const std::string info =
      tqref::report::json_line({{"abi", TQREF_C_ABI_VERSION},
                                {"version", tqref::kVersion},
                                {"git_commit", tqref::kGitCommit},
                                {"openmp_threads", omp_get_max_threads()},
                                {"sparse_v_threshold_bits", tqref::f32_bits(tqref::kSparseVThreshold)}});
  return info.c_str();
}

const char* tqref_last_error(void) { return tqref::capi::last_error().c_str(); }

void tqref_string_free(char* s) { std::free(s); }

}  // extern "C"
