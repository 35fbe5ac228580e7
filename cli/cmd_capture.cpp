// `tqref capture`: runs a llama2.c checkpoint (e.g. stories15M, scripts/fetch-model.sh) greedily
// on one or more prompts and writes every layer's post-RoPE q, k and the v of every position as a
// trace (docs/trace-schema.md). `tqref capture --validate FILE` (also `tqref trace-validate FILE`)
// checks any trace file, ours or an engine's, against the schema. `tqref trace-golden` builds the
// 'real' golden suite from a trace (the `--trace` mode meant for `tqref generate`).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "capture/checkpoint.h"
#include "capture/tokenizer.h"
#include "capture/transformer.h"
#include "command.h"
#include "options.h"
#include "io/atomic_output.h"
#include "generate_trace.h"
#include "io/hdf5_util.h"
#include "io/input_file.h"
#include "io/text_escape.h"
#include "io/trace_file.h"
#include "tqref/build_info.h"

namespace po = boost::program_options;

namespace {

using namespace tqref::cli;
using namespace tqref::trace;

int validate(const std::string& path, const char* cmd) {
  std::vector<std::string> problems = validate_trace(path);
  if (!problems.empty()) {
    std::fprintf(stderr, "tqref %s: %s does not follow %s v%d (%zu problem%s):\n", cmd, path.c_str(),
                 kTraceSchema, kTraceSchemaVersion, problems.size(), problems.size() == 1 ? "" : "s");
    for (const auto& p : problems) std::fprintf(stderr, "  %s\n", p.c_str());
    return kExitBadInput;
  }
  Trace t = read_trace(path);
  std::printf("%s: valid %s v%d: model %s, %d layers, %d q heads, %d kv heads, head_dim %d, "
              "%zu sequence%s (T =", path.c_str(), kTraceSchema, kTraceSchemaVersion,
              tqref::printable(t.meta.model_name).c_str(), t.meta.num_layers, t.meta.num_q_heads,
              t.meta.num_kv_heads, t.meta.head_dim, t.sequences.size(),
              t.sequences.size() == 1 ? "" : "s");
  for (const auto& s : t.sequences) std::printf(" %d", s.num_tokens);
  std::printf(")\n");
  return kExitOk;
}

int cmd_trace_validate(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0] == "--help" || args[0] == "-h") {
    std::fprintf(args.size() == 1 ? stdout : stderr,
                 "usage: tqref trace-validate FILE\n  Checks FILE against the trace schema "
                 "(docs/trace-schema.md); exit 0 valid, 3 not valid.\n");
    return args.size() == 1 ? kExitOk : kExitUsage;
  }
  return validate(args[0], "trace-validate");
}

// One prompt per non-empty line; a trailing '\r' is dropped.
std::vector<std::string> read_prompt_file(const std::string& path) {
  std::istringstream in(tqref::read_text_input(path, "--prompt-file"));  // regular file, <= 1 MiB
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) prompts.push_back(line);
  }
  if (prompts.empty()) throw std::invalid_argument("--prompt-file " + path + ": no prompts");
  return prompts;
}

std::string join_args(const std::vector<std::string>& args) {
  std::string s = "tqref capture";
  for (const auto& a : args) {
    bool quote = a.find_first_of(" \t\"'") != std::string::npos;
    s += " " + (quote ? "'" + a + "'" : a);
  }
  return s;
}

int cmd_capture(const std::vector<std::string>& args) {
  std::string checkpoint, tokenizer, prompt, prompt_file, out, validate_path, model_name;
  int tokens = -1;
  po::options_description desc(
      "usage: tqref capture --checkpoint model.bin --tokenizer tokenizer.bin "
      "(--prompt TEXT | --prompt-file F) --tokens N --out trace.h5\n"
      "       tqref capture --validate FILE\n"
      "Greedy generation with a llama2.c checkpoint; writes every layer's post-RoPE q, k and v of\n"
      "every position (prompt and generated) as bf16 to a trace (docs/trace-schema.md)");
  desc.add_options()("help,h", "this help")(
      "checkpoint", po::value(&checkpoint), "llama2.c model.bin (scripts/fetch-model.sh)")(
      "tokenizer", po::value(&tokenizer), "llama2.c tokenizer.bin")(
      "prompt", po::value(&prompt), "one prompt")(
      "prompt-file", po::value(&prompt_file), "one prompt per non-empty line; one sequence each")(
      "tokens", po::value(&tokens), "tokens to generate per prompt (prompt + N <= seq_len)")(
      "model-name", po::value(&model_name)->default_value("stories15M"), "recorded as model_name")(
      "out", po::value(&out), "trace file to write (via a temporary file and a rename)")(
      "validate", po::value(&validate_path), "only check FILE against the trace schema");
  po::variables_map vm;
  if (const auto rc = parse_options("tqref capture", args, desc, vm)) return *rc;
  if (vm.count("validate")) return validate(validate_path, "capture --validate");
  std::string missing;
  for (const char* o : {"checkpoint", "tokenizer", "tokens", "out"})
    if (!vm.count(o)) missing += std::string(missing.empty() ? "" : ", ") + "--" + o;
  if (vm.count("prompt") == vm.count("prompt-file"))
    missing += std::string(missing.empty() ? "" : ", ") + "exactly one of --prompt, --prompt-file";
  if (!missing.empty()) {
    std::fprintf(stderr, "tqref capture: missing %s (see --help)\n", missing.c_str());
    return kExitUsage;
  }
  if (const std::string why = tqref::common::output_path_problem(out, {checkpoint, tokenizer, prompt_file});
      !why.empty()) {
    std::fprintf(stderr, "tqref capture: --out %s\n", why.c_str());
    return kExitUsage;
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    Checkpoint ck = load_checkpoint(checkpoint);
    Tokenizer tok = Tokenizer::load(tokenizer, ck.cfg.vocab_size);
    if (tokens < 0 || tokens > ck.cfg.seq_len)
      throw std::invalid_argument("--tokens = " + std::to_string(tokens) + "; allowed 0.." +
                                  std::to_string(ck.cfg.seq_len) + " (seq_len of " + checkpoint +
                                  ") minus the prompt's tokens");
    std::vector<std::string> prompts =
        vm.count("prompt") ? std::vector<std::string>{prompt} : read_prompt_file(prompt_file);
    // Check every prompt's length before running any, so a bad line fails fast.
    for (size_t i = 0; i < prompts.size(); ++i) {
      size_t n = tok.encode(prompts[i], true).size();
      if (n + size_t(tokens) > size_t(ck.cfg.seq_len))
        throw std::invalid_argument("prompt " + std::to_string(i) + " (\"" + tqref::printable(prompts[i]) + "\") has " +
                                    std::to_string(n) + " tokens; + --tokens " +
                                    std::to_string(tokens) + " exceeds seq_len " +
                                    std::to_string(ck.cfg.seq_len) + " of " + checkpoint);
    }
    Trace t;
    TraceMeta& m = t.meta;
    m.model_name = model_name;
    m.producer = std::string("tqref capture ") + tqref::kVersion;
    m.num_layers = ck.cfg.n_layers;
    m.num_q_heads = ck.cfg.n_heads;
    m.num_kv_heads = ck.cfg.n_kv_heads;
    m.head_dim = ck.cfg.head_dim();
    m.attn_scale = 1.0 / std::sqrt(double(ck.cfg.head_dim()));
    m.provenance = {{"checkpoint_sha256", ck.sha256},
                    {"tokenizer_sha256", tok.sha256()},
                    {"tqref_version", tqref::kVersion},
                    {"tqref_commit", tqref::kGitCommit},
                    {"rope", "theta 10000, adjacent pairs (x[2i], x[2i+1]), applied to q and k"},
                    {"norm", "RMSNorm eps 1e-5; fp32 forward pass; q, k, v rounded to bf16 (RNE)"},
                    {"command", join_args(args)}};
    for (size_t i = 0; i < prompts.size(); ++i) {
      CapturedSequence c = generate_greedy(ck, tok, prompts[i], tokens);
      // The generated text comes from the tokenizer file's pieces: shown escaped.
      std::printf("[%zu] %s%s\n", i, tqref::printable(prompts[i], true).c_str(),
                  tqref::printable(c.generated_text, true).c_str());
      TraceSequence s;
      s.name = "seq_" + std::to_string(i);
      s.num_tokens = c.num_tokens();
      s.token_ids.assign(c.token_ids.begin(), c.token_ids.end());
      s.prompt_tokens = c.prompt_tokens;
      s.attrs = {{"prompt", c.prompt}, {"generated_text", c.generated_text},
                 {"stop_reason", c.stop_reason}};
      s.q = std::move(c.q);
      s.k = std::move(c.k);
      s.v = std::move(c.v);
      t.sequences.push_back(std::move(s));
    }
    write_trace(out, t);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "tqref capture: wrote %s (%zu sequence%s, %.2f s)\n", out.c_str(),
                 t.sequences.size(), t.sequences.size() == 1 ? "" : "s", secs);
    return kExitOk;
  } catch (const std::invalid_argument& e) {  // a checkpoint, tokenizer or prompt refused
    std::fprintf(stderr, "tqref capture: %s\n", e.what());
    return kExitBadInput;
  }
}

int cmd_trace_golden(const std::vector<std::string>& args) {
  TraceGenerateCli tc;
  std::string out, ex2_arch = "sm_90";
  uint64_t seed = 1;
  po::options_description desc(
      "usage: tqref trace-golden --trace trace.h5 --out real.h5 [options]\n"
      "Golden writer + decode cases from a real trace (docs/traces.md): every position written\n"
      "through a shuffled slot mapping, queries at chosen positions over their causal prefix, all\n"
      "layers and heads, head_dim zero-padded to the kernel's HDIM. Options");
  desc.add_options()("help,h", "this text")("out", po::value(&out), "golden HDF5 file to write")(
      "seed", po::value(&seed), "base seed for slots and poison (default 1)")(
      "ex2-arch", po::value(&ex2_arch), "EX2 profile for the decode expectations (default sm_90)");
  add_trace_generate_options(desc, tc);
  po::variables_map vm;
  if (const auto rc = parse_options("tqref trace-golden", args, desc, vm)) return *rc;
  if (tc.trace.empty() || out.empty()) {
    std::fprintf(stderr, "tqref trace-golden: give --trace and --out (see --help)\n");
    return kExitUsage;
  }
  return run_trace_generate(tc, out, seed, ex2_arch, "tqref trace-golden");
}

}  // namespace

TQREF_COMMAND("capture", "greedy run of a llama2.c checkpoint, writing a q/k/v trace", cmd_capture);
TQREF_COMMAND("trace-validate", "check a trace file against docs/trace-schema.md", cmd_trace_validate);
TQREF_COMMAND("trace-golden", "golden cases (the 'real' suite) from a trace file", cmd_trace_golden);
