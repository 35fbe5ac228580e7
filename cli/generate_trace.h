// The `--trace` mode of `tqref generate`, kept here so cmd_generate.cpp needs only a hook:
//   TraceGenerateCli tc;  add_trace_generate_options(desc, tc);
//   ... if (vm.count("trace")) return run_trace_generate(tc, out, seed, ex2_arch, "tqref generate");
// Until that hook exists, `tqref trace-golden` (cmd_capture.cpp) is the entry point.
#pragma once
#include <cstdint>
#include <string>

#include <boost/program_options.hpp>

namespace tqref::trace {

struct TraceGenerateCli {
  std::string trace, sequences, layers, formats = "rotate", queries;
  uint32_t block_size = 16;
  uint32_t padding_tokens = 2;
};

void add_trace_generate_options(boost::program_options::options_description& desc,
                                TraceGenerateCli& tc);

// Builds the golden file; returns an ExitCode (io/exit_code.h) (messages on stderr, summary on stdout).
// `command` ("tqref trace-golden" or "tqref generate") starts the recorded command line.
int run_trace_generate(const TraceGenerateCli& tc, const std::string& out, uint64_t seed,
                       const std::string& ex2_arch, const std::string& command);

}  // namespace tqref::trace
