// The command-line plumbing every subcommand shares: one option parser and one GPU check.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace tqref::cli {

// Parses `args` against `desc` (and the positional options `pos`, when given) into `vm`.
// Returns nothing when the command should go on; else the exit code it must return at once:
// kExitUsage after "<command>: <why>" on stderr for a bad command line, kExitOk after the option
// list on stdout for --help.
std::optional<int> parse_options(const std::string& command, const std::vector<std::string>& args,
                                 const boost::program_options::options_description& desc,
                                 boost::program_options::variables_map& vm,
                                 const boost::program_options::positional_options_description* pos =
                                     nullptr);

// "" when a CUDA driver with at least one device can be used; else why not (tqref built without
// CUDA, no driver, or a driver that reports 0 devices). Asked before any file is read.
std::string gpu_unavailable();

// true when a GPU can be used; else false after "<command>: no usable GPU: <why>.<hint>" on
// stderr, and the caller returns kExitNoDevice.
bool require_gpu(const std::string& command, const std::string& hint = "");

}  // namespace tqref::cli
