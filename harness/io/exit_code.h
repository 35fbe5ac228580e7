// The exit codes of the `tqref` CLI (documented in docs/cli.md). They live here, at the bottom of
// the harness, because lower layers decide them too (a conformance verdict, the interrupt handler);
// the CLI maps outcomes to them and nothing below the CLI includes it.
#pragma once
#include <stdexcept>
#include <string>

namespace tqref {

enum ExitCode : int {
  kExitOk = 0,
  kExitMismatch = 1,      // a check ran and found differences
  kExitUsage = 2,         // bad command line
  kExitBadInput = 3,      // input file or parameter outside what SPEC allows
  kExitNoDevice = 4,      // GPU backend asked for, no usable device or driver
  kExitInternal = 5,      // unexpected failure (a bug): the message says where
  kExitGpuFault = 6,      // a kernel trapped, faulted or timed out
  kExitInterrupted = 130, // SIGINT/SIGTERM: partial outputs removed
};

// An error that names the exit code its command ends with; cli/main.cpp prints what() and returns
// exit_code. For the layers whose error types the CLI cannot name in every build: gpu::Error
// (harness/gpu/driver.h) exists only where CUDA is built.
struct ExitCodeError : std::runtime_error {
  ExitCodeError(ExitCode c, const std::string& what) : std::runtime_error(what), exit_code(c) {}
  ExitCode exit_code;
};

}  // namespace tqref
