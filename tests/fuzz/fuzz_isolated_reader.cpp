// libFuzzer target: the isolation around libhdf5 (harness/io/hdf5_validate.h, isolated_call.h),
// fuzzed apart from the parsing logic. Each input is opened the way tqref opens every golden
// file: the validating pass in a child process with an idle deadline and a memory limit, its
// description parsed here, golden::check_case_memory on it, and the data read here through
// tqref's chunk decoder. Whatever libhdf5 does in the child (crash, loop, allocate without bound;
// the child's sanitizer report is printed and is not a finding), open_golden_file must return a
// node or throw h5::Error naming the file, and the golden reader must then refuse or return. A
// crash, hang or leak in this process is a finding. One fork per input: slower than the in-process targets by the fork and exec of the
// pass, not by the library's work.
#include <cstdlib>
#include <string>

#include "fuzz_common.h"
#include "io/case_io.h"

using namespace tqref;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_path(".isolated.h5");
  if (!fuzz::write_input(path, data, size)) std::abort();
  try {
    h5::Node root = golden::open_golden_file(path);
    golden::read_provenance(root);
    h5::Node cases = root.group("cases");
    for (const std::string& name : cases.children()) golden::read_case(cases, name, true);
  } catch (const h5::Error& e) {
    if (std::string(e.what()).find(path) == std::string::npos) std::abort();  // must name the file
    fuzz::refused(e.what());
  } catch (const golden::BadCase& e) {
    fuzz::refused(e.what());
  }
  return 0;
}
