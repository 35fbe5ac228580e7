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

// --model, for the subcommands that run the CPU model: which implementation runs
// (tqref/model_path.h): "simd" (default: the SIMD path on the best instruction set this CPU has;
// "fast", its former name, is still accepted), "scalar" (the readable reference), or an
// instruction set of the SIMD path ("avx512", "avx2", "portable"). Outputs are the same bits
// whichever is chosen; only the time differs.
void add_model_option(boost::program_options::options_description& desc, std::string* value);
// --model-variant NAME (docs/variants.md): the variant of the contract the CPU model computes
// (tqref::set_model_variant); "" is the contract. apply_model_variant prints
// "<command>: --model-variant ..." with the allowed names and returns false on a bad name.
void add_model_variant_option(boost::program_options::options_description& desc, std::string* value);
bool apply_model_variant(const std::string& command, const std::string& name);
// Sets the model path; on a bad value prints "<command>: --model ..." with the values this CPU
// allows and returns false (the caller exits with kExitUsage).
bool apply_model_option(const std::string& command, const std::string& value);

// The help text of a --threshold option: `what`, then the default, kSparseVThreshold
// (tqref/format.h), as the kernels' source writes it.
std::string threshold_help(const std::string& what);

// true when a GPU can be used; else false after "<command>: no usable GPU: <why>.<hint>" on
// stderr (why: gpu::unavailable_reason(), gpu/availability.h; tqref built without CUDA, no
// driver, or a driver that reports 0 devices), and the caller returns kExitNoDevice. Asked before
// any file is read.
bool require_gpu(const std::string& command, const std::string& hint = "");

}  // namespace tqref::cli
