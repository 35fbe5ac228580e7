#include "options.h"

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "command.h"
#include "gpu/availability.h"
#include "tqref/format.h"
#include "tqref/model_path.h"

namespace po = boost::program_options;

namespace tqref::cli {

void add_model_option(po::options_description& desc, std::string* value) {
  desc.add_options()("model", po::value(value),
                     "CPU model: simd (default; \"fast\" is its former name), scalar (the readable "
                     "reference), or an instruction set of the simd path: avx512, avx2, portable; "
                     "same bits, different speed");
}

void add_model_variant_option(po::options_description& desc, std::string* value) {
  desc.add_options()("model-variant", po::value(value),
                     "compute expectations with a variant of the contract (docs/variants.md), "
                     "e.g. nvcc-fmad for a build without --fmad=false; default: the file's "
                     "recorded variant (check) or the contract (generate)");
}

bool apply_model_variant(const std::string& command, const std::string& name) {
  try {
    set_model_variant(name.empty() ? Variant{} : parse_variant(name));
    return true;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: --model-variant: %s\n", command.c_str(), e.what());
    return false;
  }
}

bool apply_model_option(const std::string& command, const std::string& value) {
  std::string allowed = "simd (or its former name fast), scalar";
  for (const std::string& isa : simd_isas()) {
    if (isa == value) {
      set_simd_isa(value);
      set_model_path(ModelPath::simd);
      return true;
    }
    allowed += ", " + isa;
  }
  try {
    set_model_path(value.empty() ? ModelPath::simd : parse_model_path(value));
    return true;
  } catch (const std::invalid_argument&) {
    std::fprintf(stderr, "%s: --model %s; allowed on this CPU: %s\n", command.c_str(), value.c_str(),
                 allowed.c_str());
    return false;
  }
}

std::optional<int> parse_options(const std::string& command, const std::vector<std::string>& args,
                                 const po::options_description& desc, po::variables_map& vm,
                                 const po::positional_options_description* pos) {
  try {
    po::command_line_parser parser(args);
    parser.options(desc);
    if (pos) parser.positional(*pos);
    po::store(parser.run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "%s: %s\n", command.c_str(), e.what());
    return kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    return kExitOk;
  }
  return std::nullopt;
}

bool require_gpu(const std::string& command, const std::string& hint) {
  const std::string why = gpu::unavailable_reason();
  if (why.empty()) return true;
  std::fprintf(stderr, "%s: no usable GPU: %s.%s\n", command.c_str(), why.c_str(), hint.c_str());
  return false;
}

std::string threshold_help(const std::string& what) {
  char d[32];
  std::snprintf(d, sizeof d, "%g", double(kSparseVThreshold));
  std::string help = what;
  help += " (default ";
  help += d;
  help += ')';
  return help;
}

}  // namespace tqref::cli
