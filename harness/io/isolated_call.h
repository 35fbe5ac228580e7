// Runs one risky library call in a forked child process with a deadline, so that a library bug
// triggered by a hostile input (an endless loop, a wild memcpy, a crash) costs the child, not
// tqref. Used by h5::Node::attr_string for variable-length strings, which libhdf5 1.10 reads
// through its global heap without checking the stored lengths (docs/reliability.md, findings 4
// and 5).
//
// The child: inherits the parent's memory (so it can use handles the parent opened), resets the
// fatal-signal and interrupt handlers to their defaults (a test framework's or tqref's own
// handler must not run there), disables a sanitizer's death callback (libFuzzer's would record
// the child's crash as the fuzzer's), runs `fn`, writes the bytes it produced to a pipe and
// leaves with _exit: no atexit handler, no stdio flush, no destructor, no library shutdown (which
// could write to files the parent has open).
//
// Requirements on the caller: fork from a point where no other thread holds a lock the child
// needs (tqref calls libhdf5 from one thread only; OpenMP workers are idle between parallel
// regions and never call it), and `fn` must only read through file descriptors with pread, never
// move a shared file offset (checked for HDF5's sec2 driver in hdf5_util.cpp).
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
    timed_out,  // no result within the deadline: the child was killed
    too_large,  // the child produced more than max_bytes: killed
  };
  Status status = Status::ok;
  std::string data;
  int signal = 0;
  int exit_code = 0;
  // "signal 11 (Segmentation fault)", "exit status 1", "no result within 5 s", ... ("" when ok).
  std::string describe(double timeout_s) const;
};

// Runs fn(out) in a child. Throws std::runtime_error when the child cannot be started (fork or
// pipe fails).
IsolatedResult run_isolated(const std::function<bool(std::string& out)>& fn, double timeout_s,
                            size_t max_bytes);

}  // namespace tqref
