// Reliability helpers (harness/io/atomic_output, harness/gpu/deadline_wait) and reproducibility
// (docs/reliability.md): atomic outputs and the interrupt handler, the deadline wait of the GPU
// launch watchdog, model outputs and golden bytes independent of the OpenMP thread count, and the
// fuzzers' findings replayed.
#define BOOST_TEST_MODULE reliability
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cases/builders.h"
#include "cases/spec_checks.h"
#include "cases/suites.h"
#include "gpu/deadline_wait.h"
#include "gpu/launch_fault_policy.h"
#include "io/atomic_output.h"
#include "io/ex2_profile_io.h"
#include "io/hdf5_util.h"
#include "io/hdf5_validate.h"
#include "io/input_file.h"
#include "io/isolated_call.h"

namespace fs = std::filesystem;
using namespace tqref::common;

extern "C" int tqref_fuzz_golden_reader(const uint8_t* data, size_t size);
extern "C" int tqref_fuzz_trace_reader(const uint8_t* data, size_t size);
extern "C" int tqref_fuzz_sweep_config(const uint8_t* data, size_t size);
extern "C" int tqref_fuzz_ex2_profile(const uint8_t* data, size_t size);
extern "C" int tqref_fuzz_isolated_reader(const uint8_t* data, size_t size);
extern "C" int tqref_fuzz_chunk_decoder(const uint8_t* data, size_t size);

namespace {

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("tqref_reliability_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

size_t count_files(const fs::path& d) {
  return size_t(std::distance(fs::directory_iterator(d), fs::directory_iterator()));
}

int run(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}


template <class T>
uint64_t bytes_of(const std::vector<T>& v) { return uint64_t(v.size()) * sizeof(T); }

// Every buffer a built case holds, in bytes.
uint64_t case_bytes(const tqref::golden::GoldenCase& c) {
  const auto& w = c.w;
  const auto& d = c.d;
  return bytes_of(w.key) + bytes_of(w.value) + bytes_of(w.slot_mapping) + bytes_of(w.k_init) + bytes_of(w.v_init) +
         bytes_of(w.k_expected) + bytes_of(w.v_expected) + bytes_of(d.q) + bytes_of(d.block_tables) +
         bytes_of(d.seq_lens) + bytes_of(d.k_init) + bytes_of(d.v_init) + bytes_of(d.out_init) +
         bytes_of(d.out_expected) + bytes_of(d.diag.skip_offsets) + bytes_of(d.diag.skip_mask) +
         bytes_of(d.diag.skip_count) + bytes_of(d.diag.m) + bytes_of(d.diag.l) + bytes_of(d.diag.out_f32) +
         bytes_of(d.diag.ref_dequantised) + bytes_of(d.diag.ref_unquantised);
}

}  // namespace

// Would catch: an output visible before it is complete, a temporary left after commit, or a
// temporary left when the writer gives up (exception, early return).
BOOST_AUTO_TEST_CASE(atomic_output_commit_and_abandon) {
  const fs::path d = scratch("atomic");
  {
    AtomicOutput out((d / "a.txt").string());
    std::ofstream(out.temp_path()) << "whole";
    BOOST_TEST(!fs::exists(d / "a.txt"));
    BOOST_TEST(fs::exists(out.temp_path()));
    out.commit();
  }
  BOOST_TEST(slurp(d / "a.txt") == "whole");
  BOOST_TEST(count_files(d) == 1u);
  {
    AtomicOutput out((d / "b.txt").string());
    std::ofstream(out.temp_path()) << "half";
  }
  BOOST_TEST(!fs::exists(d / "b.txt"));
  BOOST_TEST(count_files(d) == 1u);
  write_file_atomic((d / "a.txt").string(), "replaced");
  BOOST_TEST(slurp(d / "a.txt") == "replaced");
  BOOST_TEST(count_files(d) == 1u);
  fs::remove_all(d);
}

// Would catch: outputs accepted into a missing directory or onto a directory (found only after
// the work is done), or a valid path refused.
BOOST_AUTO_TEST_CASE(output_path_checks) {
  const fs::path d = scratch("paths");
  BOOST_TEST(output_path_problem((d / "x.h5").string()).empty());
  BOOST_TEST(count_files(d) == 0u);  // the probe file is gone
  BOOST_TEST(output_path_problem((d / "nodir" / "x.h5").string()).find("does not exist") != std::string::npos);
  BOOST_TEST(output_path_problem(d.string()).find("is a directory") != std::string::npos);
  BOOST_TEST(!output_path_problem("").empty());
  // Non-regular destinations, the same file as an input or another output (also via a symlink
  // or a path with "..", and for a name that does not exist yet), names too long to create.
  BOOST_TEST(output_path_problem("/dev/null").find("is a character device") != std::string::npos);
  std::ofstream(d / "in.h5") << "input";
  fs::create_symlink(d / "in.h5", d / "link.h5");
  fs::create_directories(d / "sub");
  const std::string in = (d / "in.h5").string();
  BOOST_TEST(output_path_problem(in, {in}).find("is the same file as") != std::string::npos);
  BOOST_TEST(output_path_problem((d / "link.h5").string(), {in}).find("is the same file as") != std::string::npos);
  BOOST_TEST(output_path_problem((d / "sub" / ".." / "in.h5").string(), {in}).find("same file") != std::string::npos);
  BOOST_TEST(output_path_problem((d / "new.json").string(), {(d / "sub" / ".." / "new.json").string()})
                 .find("same file") != std::string::npos);
  BOOST_TEST(output_path_problem((d / "other.json").string(), {in}).empty());
  BOOST_TEST(output_path_problem((d / std::string(300, 'n')).string()).find("File name too long") != std::string::npos);
  BOOST_TEST(output_path_problem("/proc/self/x.json").find("cannot create") != std::string::npos);
  // Output directories: existing, creatable, or refused.
  BOOST_TEST(output_dir_problem((d / "sub").string()).empty());
  BOOST_TEST(output_dir_problem((d / "a" / "b").string()).empty());
  BOOST_TEST(!fs::exists(d / "a"));  // checked, not created
  BOOST_TEST(output_dir_problem((d / "in.h5" / "x").string()).find("not a directory") != std::string::npos);
  fs::remove_all(d);
}

// Would catch: a commit that replaces an input this process read (a reproducer named like the
// golden file it came from) or a device file, or that leaves the temporary after refusing.
BOOST_AUTO_TEST_CASE(commit_never_replaces_an_input) {
  const fs::path d = scratch("commit");
  std::ofstream(d / "input.txt") << "precious";
  { const tqref::InputFile in((d / "input.txt").string(), "test input"); }  // registered as read
  BOOST_CHECK_THROW(write_file_atomic((d / "input.txt").string(), "overwritten"), OutputError);
  BOOST_TEST(slurp(d / "input.txt") == "precious");
  BOOST_TEST(count_files(d) == 1u);
  fs::remove_all(d);
}

// Would catch: a handler that leaves registered temporaries, removes committed outputs, or exits
// with another status than 130 (kExitInterrupted).
BOOST_AUTO_TEST_CASE(interrupt_removes_registered_temporaries) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXFSZ}) {
    const fs::path d = scratch("signal" + std::to_string(sig));
    const pid_t pid = fork();
    if (pid == 0) {
      install_interrupt_cleanup();
      write_file_atomic((d / "done.txt").string(), "kept");
      AtomicOutput a((d / "a.h5").string()), b((d / "b.h5").string());
      std::ofstream(a.temp_path()) << "partial";
      std::ofstream(b.temp_path()) << "partial";
      std::freopen("/dev/null", "w", stderr);
      raise(sig);
      _exit(99);  // not reached: the handler exits
    }
    int st = 0;
    BOOST_TEST_REQUIRE(waitpid(pid, &st, 0) == pid);
    BOOST_TEST(WIFEXITED(st));
    BOOST_TEST(WEXITSTATUS(st) == kInterruptExitCode);
    BOOST_TEST(slurp(d / "done.txt") == "kept");
    BOOST_TEST(count_files(d) == 1u, "signal " << sig << " left temporaries");
    fs::remove_all(d);
  }
}

// Would catch: a watchdog that returns before the work completes, misses an error code, or
// waits far past its deadline (a hung kernel would hang `tqref check`).
BOOST_AUTO_TEST_CASE(deadline_wait_outcomes) {
  constexpr int kNotReady = 600;  // CUDA_ERROR_NOT_READY
  int polls = 0;
  WaitResult r = wait_with_deadline([&] { return ++polls < 5 ? kNotReady : 0; }, kNotReady, std::chrono::seconds(5));
  BOOST_TEST((r.outcome == WaitOutcome::done));
  BOOST_TEST(polls == 5);
  polls = 0;
  r = wait_with_deadline([&] { return ++polls < 3 ? kNotReady : 700; }, kNotReady, std::chrono::seconds(5));
  BOOST_TEST((r.outcome == WaitOutcome::failed));
  BOOST_TEST(r.code == 700);  // CUDA_ERROR_ILLEGAL_ADDRESS
  const auto t0 = std::chrono::steady_clock::now();
  r = wait_with_deadline([] { return kNotReady; }, kNotReady, std::chrono::milliseconds(100));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST((r.outcome == WaitOutcome::timed_out));
  BOOST_TEST(waited >= 0.1);
  BOOST_TEST(waited < 0.5);
}

// Would catch: a GPU backend that resets the context while a timed-out kernel still runs (the
// reset would wait for it: `tqref check` hangs), resets after an ordinary error (needless
// reloads), continues without a reset after a sticky fault (every later case fails with the same
// error), or resets when the caller did not ask for it (tqref conform stops at the first fault).
BOOST_AUTO_TEST_CASE(launch_fault_policy) {
  using tqref::common::AfterLaunchError;
  using tqref::common::after_launch_error;
  for (bool reset : {false, true}) {
    BOOST_TEST((after_launch_error(true, true, reset) == AfterLaunchError::abandon));
    BOOST_TEST((after_launch_error(false, false, reset) == AfterLaunchError::next_case));
  }
  BOOST_TEST((after_launch_error(true, false, true) == AfterLaunchError::reset_and_continue));
  BOOST_TEST((after_launch_error(true, false, false) == AfterLaunchError::stop));
  // The later cases' error names the faulting case and why nothing was launched.
  const std::string hung = tqref::common::not_launched_message("0006_decode", true);
  BOOST_TEST(hung.find("0006_decode") != std::string::npos);
  BOOST_TEST(hung.find("abandoned") != std::string::npos);
  const std::string trapped = tqref::common::not_launched_message("0006_decode", false);
  BOOST_TEST(trapped.find("faulted the GPU context") != std::string::npos);
}

// Would catch: an isolated library call whose crash, endless loop or oversized result reaches
// the caller (the validating pass over HDF5 inputs relies on it, io/hdf5_validate.h), a child
// that runs the parent's signal handlers (Boost.Test's here: the child would carry on as a second
// test runner), an idle deadline that is not enforced or that notes do not restart, a last note
// lost when the child dies, or a result that is lost or mislabelled.
BOOST_AUTO_TEST_CASE(isolated_call_contains_crashes_and_hangs) {
  using tqref::IsolatedNote;
  using tqref::IsolatedResult;
  using tqref::run_isolated;
  using S = IsolatedResult::Status;
  const tqref::IsolatedOptions opt{5.0, size_t(1) << 20};
  IsolatedResult r = run_isolated([](std::string& out, const IsolatedNote&) { out.assign(200000, 'x'); return true; }, opt);
  BOOST_TEST((r.status == S::ok));
  BOOST_TEST(r.data.size() == 200000u);  // more than one pipe buffer
  r = run_isolated([](std::string&, const IsolatedNote&) { return false; }, opt);
  BOOST_TEST((r.status == S::refused));
  r = run_isolated([](std::string&, const IsolatedNote& note) { note("first"); note("object /x"); ::raise(SIGSEGV); return true; }, opt);
  BOOST_TEST((r.status == S::failed));
  BOOST_TEST(r.signal == SIGSEGV);
  BOOST_TEST(r.last_note == "object /x");
  BOOST_TEST(r.describe(5).find("signal 11") != std::string::npos, r.describe(5));
  r = run_isolated([](std::string&, const IsolatedNote&) -> bool { std::abort(); }, opt);
  BOOST_TEST((r.status == S::failed));
  BOOST_TEST(r.signal == SIGABRT);
  r = run_isolated([](std::string& out, const IsolatedNote&) { out.assign(5000, 'y'); return true; }, {5.0, 4096});
  BOOST_TEST((r.status == S::too_large));
  auto t0 = std::chrono::steady_clock::now();
  r = run_isolated([](std::string&, const IsolatedNote& note) { note("spinning"); volatile int spin = 0; for (;;) spin = spin + 1; return true; },
                   {0.3, size_t(1) << 20});
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST((r.status == S::timed_out));
  BOOST_TEST(r.last_note == "spinning");
  BOOST_TEST(waited >= 0.3);
  BOOST_TEST(waited < 2.0);
  BOOST_TEST(r.describe(0.3).find("no progress within") != std::string::npos);
  // Notes restart the idle deadline: 1 s of work in 0.1 s steps passes a 0.5 s idle deadline.
  t0 = std::chrono::steady_clock::now();
  r = run_isolated([](std::string& out, const IsolatedNote& note) {
                     for (int i = 0; i < 10; ++i) { note("step " + std::to_string(i)); ::usleep(100000); }
                     out = "done";
                     return true;
                   }, {0.5, size_t(1) << 20});
  waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  BOOST_TEST((r.status == S::ok), r.describe(0.5));
  BOOST_TEST(r.data == "done");
  BOOST_TEST(waited >= 0.9);
}

// Would catch: libhdf5's endless loop or memory corruption on malformed metadata reaching tqref
// again: a corrupt variable-length string attribute (fuzz findings 4 and 5, docs/reliability.md)
// and a golden file whose link messages libhdf5 frees wildly (finding 6) must be refused with
// exit 3 naming the file and the object, as must a trace whose integer attribute claims 193 bits
// in 8 bytes (finding 7: refused as a nonstandard number type before libhdf5 converts it; without
// that check `head_dim` read as 2^63-1), within the 10 s idle deadline of the validating pass plus
// margin, by every command that reads them. A golden file whose corrupt object header makes
// libhdf5 ask for 1.6 GB (in H5C_protect; sixth session's campaigns) must be refused the same way
// with the default budget, where the untouched allocation succeeds in the validating child, and
// with --max-memory 512M, where the child's memory limit (768 MiB) makes it fail: a child that
// dies of the failed allocation instead of reporting it would give another exit code. A golden
// file on whose attribute table libhdf5 reads freed memory (heap-use-after-free in
// H5A__compact_build_table under H5Aiterate2, in process; twelfth session's campaign) must be
// refused naming the object, as must a trace whose object header asks libhdf5 for 14 EB (in
// H5C_protect, in process; thirteenth session's campaign). (ASan's
// allocator aborts on a failed allocation unless told to return null, as glibc's malloc does;
// the variable means nothing to other builds.)
BOOST_AUTO_TEST_CASE(libhdf5_failures_on_malformed_files_are_refused) {
  const std::string root = TQREF_SOURCE_DIR "/tests/fuzz/regressions/";
  struct Sample {
    std::string command, file, says, env = "";
  };
  const std::vector<Sample> samples = {
      {"trace-validate", "fuzz_trace_reader/trace_vlen_global_heap_hang.h5",
       ":/ attribute '"},
      {"trace-validate", "fuzz_trace_reader/trace_vlen_global_heap_overlap.h5",
       ":/ attribute '"},
      {"inspect", "fuzz_golden_reader/golden_link_message_free_crash.h5", "/diagnostics: corrupt file"},
      {"check", "fuzz_golden_reader/golden_link_message_free_crash.h5", "/diagnostics: corrupt file"},
      {"trace-validate", "fuzz_trace_reader/trace_integer_of_193_bits.h5",
       ":/ attribute 'head_dim': corrupt file: an integer type of 8 bytes with 193 bits of precision"},
      {"check", "fuzz_golden_reader/golden_object_header_wild_allocation.h5",
       "__writer: corrupt file: unreadable object header"},
      {"--max-memory 512M check", "fuzz_golden_reader/golden_object_header_wild_allocation.h5",
       "__writer: corrupt file: unreadable object header", "ASAN_OPTIONS=allocator_may_return_null=1 "},
      {"check", "fuzz_golden_reader/golden_attribute_table_use_after_free.h5", "_win2_shuffled_gaussian: corrupt file"},
      {"trace-validate", "fuzz_trace_reader/trace_object_header_wild_allocation.h5",
       ":/sequences/b: corrupt file: unreadable object header"},
  };
  for (const Sample& s : samples) {
    BOOST_TEST_CONTEXT(s.command << " " << s.file) {
      const fs::path d = scratch("libhdf5");
      const auto t0 = std::chrono::steady_clock::now();
      const int code = run("cd '" + d.string() + "' && " + s.env + "'" TQREF_CLI "' " + s.command + " '" + root +
                           s.file + "' > out.txt 2>&1");
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::string out = slurp(d / "out.txt");
      BOOST_TEST(code == 3, out);
      BOOST_TEST(out.find(fs::path(s.file).filename().string()) != std::string::npos, out);
      BOOST_TEST(out.find(s.says) != std::string::npos, out);
      BOOST_TEST(out.find("corrupt file") != std::string::npos, out);
      BOOST_TEST(secs < 30.0);
      BOOST_TEST(count_files(d) == 1u);  // nothing written but the captured output
      fs::remove_all(d);
    }
  }
}

// Would catch: what tqref's process holds of a corrupt file outgrowing the file again (fuzz
// finding 9, docs/reliability.md): in this 19240-byte trace a corrupt global heap gives the string
// attribute 'schema' a length of gigabytes. Copied whole into the validated copy of the old
// design, it peaked tqref's process at 8.8 GB with the 8G budget. The description holds each
// string up to its first NUL, within description_limit: the file opens, 'schema' reads as the
// one character before the NUL, and this process grows by far less than the heap claims (the
// child's allocation inside libhdf5 is bounded by its RLIMIT_DATA).
BOOST_AUTO_TEST_CASE(description_is_bounded_by_the_file) {
  namespace h5 = tqref::h5;
  const std::string file = TQREF_SOURCE_DIR "/tests/fuzz/regressions_heavy/trace_copy_grows_past_the_file.h5";
  BOOST_TEST(h5::description_limit(19240) == 16u * 19240u + (128u << 20));
  const auto peak_kb = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
  };
  const long before = peak_kb();
  h5::set_validation_idle_timeout(300);
  std::string schema;
  try {
    schema = h5::Node::open_file(file).attr_string("schema");
  } catch (const h5::Error& e) {  // where the child runs short of memory first: a corrupt file
    BOOST_TEST(std::string(e.what()).find("trace_copy_grows_past_the_file.h5:/") != std::string::npos, e.what());
    BOOST_TEST(std::string(e.what()).find("corrupt file") != std::string::npos, e.what());
  }
  h5::set_validation_idle_timeout(h5::kIdleTimeoutS);
  BOOST_TEST_MESSAGE("schema '" << schema << "', peak resident memory of this process grew by " << peak_kb() - before << " KB");
  BOOST_TEST(schema.size() <= 1u);
  BOOST_TEST(peak_kb() - before < 64L * 1024);
}

namespace {

namespace h5 = tqref::h5;

// Writes attribute `name` of `type` and `space` holding `value` on `obj`.
void put_attr(hid_t obj, const char* name, hid_t type, hid_t space, const void* value, H5T_cset_t cset = H5T_CSET_ASCII) {
  h5::Handle acpl(H5Pcreate(H5P_ATTRIBUTE_CREATE), H5Pclose);
  H5Pset_char_encoding(acpl.get(), cset);
  h5::Handle a(H5Acreate2(obj, name, type, space, acpl.get(), H5P_DEFAULT), H5Aclose);
  BOOST_TEST_REQUIRE(a.get() >= 0, name);
  if (value) BOOST_TEST_REQUIRE(H5Awrite(a.get(), type, value) >= 0, name);
}

// The attribute `name` of `obj` read in its own type's memory form, with that type.
struct AttrValue {
  h5::Handle type;
  std::vector<unsigned char> bytes;
  hssize_t n = 0;
};
AttrValue get_attr(hid_t obj, const char* name) {
  AttrValue v;
  h5::Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  BOOST_TEST_REQUIRE(a.get() >= 0, name);
  h5::Handle space(H5Aget_space(a.get()), H5Sclose);
  v.type = h5::Handle(H5Aget_type(a.get()), H5Tclose);
  v.n = H5Sget_simple_extent_npoints(space.get());
  v.bytes.assign(H5Tget_size(v.type.get()) * size_t(v.n), 0);
  if (v.n > 0) BOOST_TEST_REQUIRE(H5Aread(a.get(), v.type.get(), v.bytes.data()) >= 0, name);
  return v;
}


// The file of description_keeps_every_attribute: objects with dense attribute storage, a second
// hard link and a named datatype, carrying every kind of attribute a writer may use.
void write_dense_attribute_file(const std::string& file) {
  h5::Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  h5::Handle f(H5Fcreate(file.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
  h5::Handle scalar(H5Screate(H5S_SCALAR), H5Sclose), null(H5Screate(H5S_NULL), H5Sclose);
  hsize_t three = 3, two = 2;
  h5::Handle vec3(H5Screate_simple(1, &three, nullptr), H5Sclose), vec2(H5Screate_simple(1, &two, nullptr), H5Sclose);
  h5::Handle vstr(H5Tcopy(H5T_C_S1), H5Tclose), fstr(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(vstr.get(), H5T_VARIABLE);
  H5Tset_cset(vstr.get(), H5T_CSET_UTF8);
  H5Tset_size(fstr.get(), 6);
  h5::Handle named(H5Tcopy(H5T_NATIVE_INT16), H5Tclose);
  BOOST_TEST_REQUIRE(H5Tcommit2(f.get(), "t", named.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) >= 0);
  h5::Handle g(H5Gcreate2(f.get(), "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  BOOST_TEST_REQUIRE(H5Lcreate_hard(f.get(), "g", f.get(), "alias", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  h5::Handle ds(H5Dcreate2(f.get(), "d", H5T_NATIVE_INT32, vec3.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  const int32_t data[3] = {1, 2, 3};
  BOOST_TEST_REQUIRE(H5Dwrite(ds.get(), H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
  for (hid_t obj : {f.get(), g.get(), ds.get(), named.get()}) {
    for (int64_t i = 0; i < 10; ++i)  // more than 8: dense storage
      put_attr(obj, ("i" + std::to_string(i)).c_str(), H5T_STD_I64LE, scalar.get(), &i);
    const char* note = "written as h5py writes str";
    put_attr(obj, "note", vstr.get(), scalar.get(), &note);
  }
  const char* strings[3] = {"first", "", "dritte \xc3\xa4"};
  put_attr(g.get(), "strings", vstr.get(), vec3.get(), strings);
  put_attr(g.get(), "fixed", fstr.get(), scalar.get(), "abcdef");
  const double size = 2.5;
  put_attr(g.get(), "gr\xc3\xb6\xc3\x9f" "e", H5T_IEEE_F64LE, scalar.get(), &size, H5T_CSET_UTF8);
  struct Pair {
    int32_t a;
    double b;
  } pair{7, -0.125};
  h5::Handle compound(H5Tcreate(H5T_COMPOUND, sizeof(Pair)), H5Tclose);
  H5Tinsert(compound.get(), "a", HOFFSET(Pair, a), H5T_NATIVE_INT32);
  H5Tinsert(compound.get(), "b", HOFFSET(Pair, b), H5T_NATIVE_DOUBLE);
  put_attr(g.get(), "compound", compound.get(), scalar.get(), &pair);
  h5::Handle seq(H5Tvlen_create(H5T_NATIVE_INT32), H5Tclose);
  int32_t s0[2] = {1, 2}, s1[1] = {3};
  hvl_t seqs[2] = {{2, s0}, {1, s1}};
  put_attr(g.get(), "sequences", seq.get(), vec2.get(), seqs);
  const hsize_t dim3 = 3;
  h5::Handle array(H5Tarray_create2(H5T_NATIVE_INT16, 1, &dim3), H5Tclose);
  const int16_t arr[3] = {-1, 0, 1};
  put_attr(g.get(), "array", array.get(), scalar.get(), arr);
  put_attr(g.get(), "empty", H5T_NATIVE_INT32, null.get(), nullptr);
  const int16_t typed = 42;
  put_attr(g.get(), "typed", named.get(), scalar.get(), &typed);
  hobj_ref_t ref = 0;
  BOOST_TEST_REQUIRE(H5Rcreate(&ref, f.get(), "d", H5R_OBJECT, -1) >= 0);
  put_attr(g.get(), "reference", H5T_STD_REF_OBJ, scalar.get(), &ref);
}
}  // namespace

// Would catch: a valid file refused or changed on its way through the validating child. libhdf5
// 1.10's H5Ocopy crashed (signal 11 in the child of the old design, so "corrupt file") copying an
// object whose attributes are in dense storage (more than 8: h5py with libver='latest', or tqref's
// own 1.10-format files once a variable-length string is added) when one is a variable-length
// string. Here every kind of attribute a writer may use sits on objects with dense storage, a
// second hard link and a named datatype included; each must read back from the description as
// libhdf5 reads it from the file, or be refused as a kind of value the readers never read.
BOOST_AUTO_TEST_CASE(description_keeps_every_attribute) {
  const fs::path d = scratch("dense_attributes");
  const std::string file = (d / "dense.h5").string();
  write_dense_attribute_file(file);
  // Through the description (hdf5_description.h): every attribute listed as libhdf5 lists it, and
  // each read back as libhdf5 reads it from the file itself, or refused as the readers refuse a
  // kind of value they never read.
  const h5::Node root = h5::Node::open_file(file);  // threw "corrupt file ... signal 11" once
  h5::Handle src(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  for (const std::string obj : {"", "g", "alias", "d", "t"}) {
    BOOST_TEST_CONTEXT("object '" << obj << "'") {
      h5::Handle s(H5Oopen(src.get(), obj.empty() ? "." : obj.c_str(), H5P_DEFAULT), H5Oclose);
      H5O_info_t si;
      H5Oget_info2(s.get(), &si, H5O_INFO_NUM_ATTRS);
      const std::vector<std::string> names = root.attr_names(obj);
      BOOST_TEST_REQUIRE(names.size() == si.num_attrs);
      BOOST_TEST(si.num_attrs >= 11u);
      for (hsize_t i = 0; i < si.num_attrs; ++i) {
        char name[64] = {};
        H5Aget_name_by_idx(s.get(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        BOOST_TEST(names[i] == name);
        BOOST_TEST_CONTEXT("attribute " << name) {
          const AttrValue a = get_attr(s.get(), name);
          const std::string n = name;
          std::string refusal;
          try {
            const h5::Node::AttrValue v = root.attr_value(n, obj);
            if (n == "note") BOOST_TEST(std::get<std::string>(v) == std::string(*reinterpret_cast<char* const*>(a.bytes.data())));
            else if (n == "fixed") BOOST_TEST(std::get<std::string>(v) == "abcdef");
            else if (n == "typed") BOOST_TEST(std::get<int64_t>(v) == 42);
            else if (n[0] == 'i') BOOST_TEST(std::get<int64_t>(v) == std::stoll(n.substr(1)));
            else BOOST_TEST(std::get<double>(v) == 2.5);
          } catch (const h5::Error& e) {
            refusal = e.what();
          }
          if (n == "strings") BOOST_TEST(refusal.find("holds 3 elements; expected a single value") != std::string::npos, refusal);
          else if (n == "empty") BOOST_TEST(refusal.find("holds 0 elements") != std::string::npos, refusal);
          else if (n == "compound" || n == "sequences" || n == "array" || n == "reference")
            BOOST_TEST(refusal.find("is not a string, number or integer array") != std::string::npos, refusal);
          else BOOST_TEST(refusal.empty(), refusal);
          if (H5Tdetect_class(a.type.get(), H5T_VLEN) > 0 && a.n > 0) {
            hsize_t count = hsize_t(a.n);
            h5::Handle all(H5Screate_simple(1, &count, nullptr), H5Sclose);
            H5Dvlen_reclaim(a.type.get(), all.get(), H5P_DEFAULT, const_cast<unsigned char*>(a.bytes.data()));
          }
        }
      }
    }
  }
  BOOST_TEST(root.read<int32_t>("d") == std::vector<int32_t>({1, 2, 3}));
  BOOST_TEST(root.group("alias").attr_names() == root.group("g").attr_names());  // one object, two links
  fs::remove_all(d);
}

// Would catch: model results that depend on how OpenMP splits the work (shared state between
// tokens or CTAs, a reduction across threads): the committed smoke file's expectations must hold
// bit for bit with 1, 3 and 7 threads (7 > cores: preempted threads, other static partitions) and
// with OMP_DYNAMIC letting the runtime pick fewer threads.
BOOST_AUTO_TEST_CASE(model_outputs_independent_of_thread_count) {
  const std::string smoke = TQREF_SOURCE_DIR "/data/golden/smoke.h5";
  for (const char* env : {"OMP_NUM_THREADS=1", "OMP_NUM_THREADS=3", "OMP_NUM_THREADS=7",
                          "OMP_NUM_THREADS=5 OMP_DYNAMIC=true"})
    BOOST_TEST(run(std::string(env) + " '" TQREF_CLI "' check '" + smoke + "' --backend model > /dev/null") == 0,
               env);
}

// Would catch: golden bytes that depend on the thread count or on batch boundaries (generate
// builds batches of 2*threads specs in parallel): 1, 3 and 7 threads give identical files.
BOOST_AUTO_TEST_CASE(golden_bytes_independent_of_thread_count) {
  const fs::path d = scratch("repro");
  for (int th : {1, 3, 7})
    BOOST_TEST_REQUIRE(run("cd '" + d.string() + "' && '" TQREF_CLI "' generate --suite smoke --threads " +
                           std::to_string(th) + " --out t" + std::to_string(th) + ".h5 > /dev/null 2>&1") == 0);
  const std::string one = slurp(d / "t1.h5");
  BOOST_TEST(one.size() > 100000u);
  BOOST_TEST((slurp(d / "t3.h5") == one));
  BOOST_TEST((slurp(d / "t7.h5") == one));
  fs::remove_all(d);
}

// Would catch: a built-in suite spec outside the generator's limits or the default budget; a
// memory estimate (cases::memory_bytes, which the memory budget, the generator's batches and the
// sweep total rely on) below what the built cases really hold, e.g. a pad, spare
// or diagnostic buffer left out, or the threshold specs' own sequences ignored; or one far above
// them. Every smoke spec, and the same specs with every pad and spare raised, are built and their
// buffers counted; a searched spec's estimate must count the attempts it builds at once.
BOOST_AUTO_TEST_CASE(memory_estimate_bounds_built_cases) {
  using namespace tqref;
  // The built-in suites are not checked at run time (sweep points are): every spec within the
  // generator's limits and the default memory budget, so each fits a batch alone.
  for (const char* suite : {"smoke", "standard", "stress", "models", "pools", "flags"})
    for (const cases::CaseSpec& s : cases::suite_specs(suite))
      BOOST_TEST(check_spec(s).empty(), suite << ": " << check_spec(s));
  const Ex2Profile ex2 = load_ex2_profile_for_arch("sm_90");
  std::vector<cases::CaseSpec> specs = cases::suite_specs("smoke");
  const size_t n = specs.size();
  for (size_t i = 0; i < n; ++i) {
    cases::CaseSpec s = specs[i];
    s.padding_tokens += 37, s.key_pad += 64, s.value_pad += 48, s.q_pad += 40, s.v_data_pad += 300;
    s.v_block_pad += 500, s.spare_blocks += 20, s.spare_table_entries += 9;
    specs.push_back(s);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    BOOST_TEST_REQUIRE(check_spec(specs[i]).empty(), check_spec(specs[i]));
    uint64_t built = 0;
    for (const golden::GoldenCase& c : cases::build_cases(specs[i], i, 1000 + i, &ex2)) built += case_bytes(c);
    BOOST_TEST(built <= memory_bytes(specs[i]), "spec " << i << ": built " << built << " bytes, estimate "
                                                         << memory_bytes(specs[i]));
    // The estimate counts the builder's working pools too (1.3-2.1x the stored bytes here); one
    // far above would refuse sweeps that fit.
    BOOST_TEST(memory_bytes(specs[i]) <= 4 * built, "spec " << i << ": estimate " << memory_bytes(specs[i])
                                                             << " bytes for " << built << " built");
  }  // A search builds a round of attempts at once (kSearchRound): its estimate holds them all.
  for (const cases::CaseSpec& s : cases::suite_specs("flags")) {
    if (s.search_attempts < 2) continue;
    cases::CaseSpec one = s;
    one.search_attempts = 0;
    BOOST_TEST(memory_bytes(s) == std::min(s.search_attempts, cases::kSearchRound) * memory_bytes(one));
  }
}

namespace {
// A field of /proc/self/status in bytes (VmRSS, VmHWM).
uint64_t proc_status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  return 0;
}

// Precondition of the peak-memory test: AddressSanitizer keeps freed blocks resident in its
// quarantine (256 MB by default) and pads every block, so under it the peak measures the
// sanitizer, not the builder; Boost reports the test as skipped there, with this message. The
// default and cpu-only builds (CI) run it.
boost::test_tools::assertion_result not_under_asan(boost::unit_test::test_unit_id) {
#if defined(__SANITIZE_ADDRESS__)
  boost::test_tools::assertion_result r(false);
  r.message() << "built with AddressSanitizer: its quarantine keeps freed memory resident, so the peak is not the builder's";
  return r;
#else
  return true;
#endif
}
}  // namespace

// Would catch: building a case holding its data twice at the peak (the built cases copied out of
// an initializer list did, 1.7x the estimate on a 128k-token decode pair; docs/conformance/
// 2026-12-05-golden-20gb-vm.md), so that the memory budget, which is checked against the
// estimate, no longer bounds what generate takes. The peak resident growth while one decode pair
// of an 8B model's layer geometry is built must stay within the estimate (plus 25 % for the
// allocator and the model's own buffers).
BOOST_AUTO_TEST_CASE(building_a_case_peaks_near_its_estimate, *boost::unit_test::precondition(not_under_asan)) {
  using namespace tqref;
  cases::CaseSpec s;
  s.kind = golden::CaseKind::decode;
  s.num_kv_heads = 8;
  s.q_per_kv = 4;
  s.seq_lens = {4096, 2048, 2047, 256};
  s.layout = cases::Layout::shuffled;
  BOOST_TEST_REQUIRE(check_spec(s).empty(), check_spec(s));
  const Ex2Profile ex2 = load_ex2_profile_for_arch("sm_90");
  { std::ofstream("/proc/self/clear_refs") << "5"; }  // resets VmHWM to the current RSS
  const uint64_t before = proc_status_bytes("VmRSS");
  BOOST_TEST_REQUIRE(proc_status_bytes("VmHWM") <= before + (4u << 20), "VmHWM was not reset");
  uint64_t built = 0;
  for (const golden::GoldenCase& c : cases::build_cases(s, 0, 7, &ex2)) built += case_bytes(c);
  const uint64_t growth = proc_status_bytes("VmHWM") - before, estimate = memory_bytes(s);
  BOOST_TEST(built > 0u);
  BOOST_TEST(growth <= estimate + estimate / 4, "peak growth " << growth << " bytes, estimate "
                                                              << estimate << ", built " << built);
}

// Would catch: a fixed fuzz finding coming back. Every input in tests/fuzz/regressions/<target>/
// (what the fuzzers found, docs/reliability.md) and every seed is replayed through the fuzz
// target's own entry point, which aborts on anything but a clean refusal or a valid result.
BOOST_AUTO_TEST_CASE(fuzz_findings_replayed) {
  const fs::path root = TQREF_SOURCE_DIR "/tests/fuzz/regressions";
  size_t replayed = 0;
  for (const auto& [dir, fn] : {std::pair{"fuzz_golden_reader", &tqref_fuzz_golden_reader},
                                std::pair{"fuzz_trace_reader", &tqref_fuzz_trace_reader},
                                std::pair{"fuzz_ex2_profile", &tqref_fuzz_ex2_profile},
                                std::pair{"fuzz_sweep_config", &tqref_fuzz_sweep_config},
                                std::pair{"fuzz_isolated_reader", &tqref_fuzz_isolated_reader},
                                std::pair{"fuzz_chunk_decoder", &tqref_fuzz_chunk_decoder}}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& e : fs::directory_iterator(root / dir)) {
      BOOST_TEST_CHECKPOINT("replaying " << e.path());
      const std::string bytes = slurp(e.path());
      fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  BOOST_TEST(replayed >= 2u, "tests/fuzz/regressions lost its inputs");
}
