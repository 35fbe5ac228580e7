// Runs one risky library call in a forked child process with a deadline, so that a library bug
// triggered by a hostile input (an endless loop, a wild memcpy, a crash) costs the child, not
// tqref. Used by the validating pass over every HDF5 input (hdf5_validate.h): libhdf5 1.10 has
// known crashes and loops on malformed metadata (docs/reliability.md, fuzz findings 4 and 5).
//
// The child: inherits the parent's memory, resets the fatal-signal and interrupt handlers to
// their defaults (a test framework's or tqref's own handler must not run there), disables a
// sanitizer's death callback (libFuzzer's would record the child's crash as the fuzzer's), asks
// the kernel to kill it when the parent dies (an interrupted tqref leaves no child behind),
// limits the memory it may add (IsolatedOptions::max_extra_memory), runs
// `fn`, sends what it produced through a pipe and leaves with _exit: no atexit handler, no stdio
// flush, no destructor, no library shutdown (which could write to files the parent has open).
// While it runs, fn may send notes (what it is working on): the parent keeps the last one, so a
// child that dies or hangs can be reported with the object it was reading, and each note restarts
// the idle deadline.
//
// Requirements on the caller: fork from a point where no other thread holds a lock the child
// needs (tqref calls libhdf5 from one thread only; OpenMP workers are idle between parallel
// regions and never call it), and `fn` must not write to files the parent uses.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace tqref {

struct IsolatedResult {
  enum class Status {
    ok,         // fn returned true: `data` holds what it produced
    refused,    // fn returned false (an ordinary error the library reported)
    failed,     // the child died: killed by `signal`, or exited with `exit_code` (a sanitizer report)
    timed_out,  // no note and no result within the idle deadline: the child was killed
    too_large,  // the child sent more than max_bytes: killed
  };
  Status status = Status::ok;
  std::string data;
  std::string last_note;  // the last note the child sent (also when it failed or timed out)
  int signal = 0;
  int exit_code = 0;
  // "signal 11 (Segmentation fault)", "exit status 1", "no progress within 10 s", ... ("" when ok).
  std::string describe(double idle_timeout_s) const;
};

struct IsolatedOptions {
  double idle_timeout_s = 10.0;        // longest time without a note or the result
  size_t max_bytes = size_t(1) << 24;  // the result (notes are not kept, only the last)
  // Memory the child may map beyond what it inherited (RLIMIT_DATA above its data size at the
  // fork; 0: no limit): a library that allocates without bound inside a call (a deflate stream
  // that inflates far past its chunk) fails its allocation instead of exhausting the machine.
  uint64_t max_extra_memory = 0;
};

using IsolatedNote = std::function<void(const std::string&)>;

// Runs fn(out, note) in a child. Throws std::runtime_error when the child cannot be started
// (fork or pipe fails).
IsolatedResult run_isolated(const std::function<bool(std::string& out, const IsolatedNote& note)>& fn,
                            const IsolatedOptions& options);

}  // namespace tqref
