// `tqref quantize`: one 16-value group through the writer's quantizer (docs/spec.md section 4), with every
// intermediate, the packed bytes, the decoder's dequantised values and the error.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "command.h"
#include "options.h"
#include "io/golden_case.h"
#include "io/input_file.h"
#include "tqref/format.h"
#include "tqref/numeric.h"
#include "tqref/quantize.h"

namespace po = boost::program_options;

namespace {

using namespace tqref;
using namespace tqref::cli;

// Splits on commas and whitespace and parses each token with strtof (decimal, hex float, nan,
// inf). Returns false with `err` naming the offending token.
bool parse_values(const std::string& text, std::vector<float>& out, std::string& err) {
  std::string norm = text;
  for (char& c : norm)
    if (c == ',') c = ' ';
  std::istringstream in(norm);
  std::string tok;
  while (in >> tok) {
    errno = 0;
    char* end = nullptr;
    float v = std::strtof(tok.c_str(), &end);
    if (end == tok.c_str() || *end != '\0') {
      err = "'" + tok + "' is not a number";
      return false;
    }
    if (errno == ERANGE && std::isinf(v)) {
      err = "'" + tok + "' overflows fp32 (allowed: |v| <= 3.4028235e38, or inf/-inf/nan)";
      return false;
    }
    out.push_back(v);
  }
  if (out.size() != kGroupSize) {
    err = "got " + std::to_string(out.size()) + " values; allowed: exactly 16";
    return false;
  }
  return true;
}

void print_group(const FormatTraits& t, const uint16_t (&x)[kGroupSize]) {
  const QuantizedGroup q = quantize_group(t, x);
  uint8_t packed[8];
  pack_group_codes(t.bits, q.codes, packed);
  std::printf("format %s: %u bits, %u levels, MAX %.9g\n", t.name, t.bits, t.levels, t.max);
  std::printf("  %2s %16s %8s %4s %16s %16s\n", "i", "bf16 input", "bits", "code", "dequantised",
              "error");
  double err_sq = 0, in_sq = 0;
  for (uint32_t i = 0; i < kGroupSize; ++i) {
    const double in = bf16_to_f32(x[i]);
    const double out = dequantize_code(t, q.codes[i], q.scale_byte);
    err_sq += (out - in) * (out - in);
    in_sq += in * in;
    std::printf("  %2u %16.9g   0x%04X %4u %16.9g %16.9g\n", i, in, x[i], q.codes[i], out,
                out - in);
  }
  std::printf("  packed codes (%u bytes):", t.group_code_bytes);
  for (uint32_t i = 0; i < t.group_code_bytes; ++i) std::printf(" %02X", packed[i]);
  std::printf("\n");
  auto line = [](const char* name, float v, const char* what) {
    std::printf("  %-4s = %-16.9g (0x%08X)  %s\n", name, v, f32_bits(v), what);
  };
  line("nsq", q.nsq, "sum of x^2, in order");
  line("amax", q.amax, "max |x| (NaN skipped)");
  line("inv", q.inv, "MAX / amax, or 1 when amax <= 1e-12");
  line("rsq", q.rsq, "sum of CB[code]^2 (fp32 codebook)");
  line("rn", q.rn, "sqrt(rsq)");
  line("s", q.scale, "sqrt(nsq) / rn, clamped to 448");
  std::printf("  scale byte 0x%02X = %.9g (fp8 E4M3; dequantised = fp16(CB[code]) * this)\n",
              q.scale_byte, fp8e4m3_to_f32(q.scale_byte));
  std::printf("  squared error %.9g, L2 error %.9g, relative L2 ", err_sq, std::sqrt(err_sq));
  if (in_sq > 0 || std::isnan(in_sq)) std::printf("%.9g\n", std::sqrt(err_sq / in_sq));
  else std::printf("n/a (input norm 0)\n");
}

int cmd_quantize(const std::vector<std::string>& args) {
  po::options_description desc(
      "usage: tqref quantize --format F (--values v0,v1,...,v15 | --file PATH)\n"
      "  Quantises one group of 16 V values as the writer kernel does (docs/spec.md section 4) and prints\n"
      "  the codes, packed bytes, scale byte, intermediates, the decoder's dequantised values\n"
      "  and the error. Values are parsed as fp32 and rounded to bf16 (nearest-even) first, since\n"
      "  the kernel reads bf16 V; errors are measured against the bf16 values. Options");
  std::string format, values, file;
  desc.add_options()("help,h", "this text")
      ("format", po::value(&format), (golden::format_names() + " or all").c_str())
      ("values", po::value(&values), "16 numbers separated by commas (nan, inf, -inf accepted)")
      ("file", po::value(&file), "text file holding 16 numbers (commas or whitespace)");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref quantize", args, desc, vm)) return *rc;
  std::vector<const FormatTraits*> formats;
  for (const auto& t : kFormats)
    if (format == "all" || format == t.name) formats.push_back(&t);
  if (formats.empty()) {
    std::fprintf(stderr, "tqref quantize: --format '%s'; allowed: %s, all\n", format.c_str(),
                 golden::format_names().c_str());
    return kExitUsage;
  }
  if (vm.count("values") == vm.count("file")) {
    std::fprintf(stderr, "tqref quantize: give exactly one of --values and --file\n");
    return kExitUsage;
  }
  std::vector<float> v;
  std::string err;
  if (vm.count("values")) {
    if (!parse_values(values, v, err)) {
      std::fprintf(stderr, "tqref quantize: --values: %s\n", err.c_str());
      return kExitUsage;
    }
  } else {
    std::string text;
    try {
      text = read_text_input(file, "--file");  // a regular file of at most 1 MiB
    } catch (const InputError& e) {
      std::fprintf(stderr, "tqref quantize: %s\n", e.what());
      return kExitBadInput;
    }
    if (!parse_values(text, v, err)) {
      std::fprintf(stderr, "tqref quantize: --file %s: %s\n", file.c_str(), err.c_str());
      return kExitBadInput;
    }
  }
  uint16_t x[kGroupSize];
  for (uint32_t i = 0; i < kGroupSize; ++i) x[i] = f32_to_bf16(v[i]);
  for (size_t k = 0; k < formats.size(); ++k) {
    if (k) std::printf("\n");
    print_group(*formats[k], x);
  }
  return kExitOk;
}

}  // namespace

TQREF_COMMAND("quantize", "one 16-value group through the writer's quantizer, step by step",
              cmd_quantize);
