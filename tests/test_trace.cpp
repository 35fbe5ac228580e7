// Real-model traces (harness/capture/, harness/io/trace_file, sha256): SHA-256, the llama2.c
// tokenizer and checkpoint loaders, RoPE, greedy generation with the real stories15M checkpoint
// (skipped with a message when it is not in the cache; scripts/fetch-model.sh puts it there), the
// trace schema validator and the committed trace under data/traces/.
#define BOOST_TEST_MODULE test_trace
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "capture/checkpoint.h"
#include "capture/tokenizer.h"
#include "capture/transformer.h"
#include "io/hdf5_util.h"
#include "io/sha256.h"
#include "io/trace_file.h"
#include "tqref/numeric.h"

namespace fs = std::filesystem;
using namespace tqref::trace;

namespace {

const std::string kCommittedTrace = std::string(TQREF_SOURCE_DIR) + "/data/traces/stories15M.h5";

fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / ("tqref_test_trace_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string model_dir() {
  const char* c = std::getenv("TQREF_CACHE");
  const char* h = std::getenv("HOME");
  std::string root = (c && *c) ? c : std::string(h ? h : ".") + "/.cache/tqref";
  return root + "/stories15M";
}

// Precondition for the cases that need the checkpoint: Boost reports them as skipped, with this
// message, when it is absent.
boost::test_tools::assertion_result model_in_cache(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(fs::exists(model_dir() + "/model.bin") &&
                                        fs::exists(model_dir() + "/tokenizer.bin"));
  r.message() << "stories15M not found in " << model_dir() << " (run scripts/fetch-model.sh)";
  return r;
}

bool real_model_present() {
  bool ok = fs::exists(model_dir() + "/model.bin") && fs::exists(model_dir() + "/tokenizer.bin");
  if (!ok)
    BOOST_TEST_MESSAGE("SKIP: stories15M not found in " + model_dir() +
                       " (run scripts/fetch-model.sh); real-checkpoint checks not run");
  return ok;
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream o(p, std::ios::binary);
  o.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

template <class T>
void put(std::vector<uint8_t>& b, T v) {
  uint8_t raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  b.insert(b.end(), raw, raw + sizeof(T));
}

// A tokenizer.bin of llama2.c layout: <unk>, BOS, EOS, the 256 byte tokens, then `extra`.
std::vector<uint8_t> tokenizer_bytes(const std::vector<std::pair<std::string, float>>& extra) {
  std::vector<std::pair<std::string, float>> toks = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (unsigned b = 0; b < 256; ++b) {
    std::string s = b < 0x80 ? std::string(1, char(b))
                             : std::string{char(0xC0 | (b >> 6)), char(0x80 | (b & 0x3F))};
    toks.emplace_back(s, 0.0f);
  }
  toks.insert(toks.end(), extra.begin(), extra.end());
  std::vector<uint8_t> out;
  put<int32_t>(out, 8);
  for (auto& [s, score] : toks) {
    put<float>(out, score);
    put<int32_t>(out, int32_t(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  return out;
}

std::string expect_invalid(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  BOOST_FAIL("expected std::invalid_argument");
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  bool ok = s.find(part) != std::string::npos;
  if (!ok) BOOST_TEST_MESSAGE("message \"" + s + "\" lacks \"" + part + "\"");
  return ok;
}

}  // namespace

// ---- SHA-256 ----------------------------------------------------------------------------------
// FIPS 180-4 example vectors; the 56- and 64-byte inputs force the two-block padding path and the
// million-'a' input many full blocks. Catches wrong padding, length encoding or round constants.
BOOST_AUTO_TEST_CASE(sha256_known_vectors) {
  auto h = [](const std::string& s) {
    return sha256_hex(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  BOOST_TEST(h("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  BOOST_TEST(h("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  BOOST_TEST(h("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
             "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  BOOST_TEST(h(std::string(1000000, 'a')) ==
             "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// ---- Tokenizer on a hand-made vocabulary ----------------------------------------------------------
// Merges follow the best score, not the first pair: " a" (-5) comes first but "ab" (-1) wins.
// Ties go to the leftmost pair. Missing characters become byte tokens 3 + byte; byte tokens never
// merge. Catches a left-to-right greedy merger, a rightmost tie rule and a missing byte fallback.
BOOST_AUTO_TEST_CASE(tokenizer_merge_rules_synthetic) {
  fs::path dir = scratch_dir();
  // ids: 259 " ", 260 "a", 261 "b", 262 " a", 263 "ab", 264 "aa"
  write_bytes(dir / "tok.bin", tokenizer_bytes({{" ", -100}, {"a", -50}, {"b", -51}, {" a", -5},
                                                {"ab", -1}, {"aa", -1}}));
  Tokenizer t = Tokenizer::load((dir / "tok.bin").string(), 265);
  BOOST_TEST(t.encode("ab", true) == (std::vector<int>{1, 259, 263}), boost::test_tools::per_element());
  BOOST_TEST(t.encode("aaa", false) == (std::vector<int>{259, 264, 260}), boost::test_tools::per_element());
  BOOST_TEST(t.encode("a", false) == (std::vector<int>{262}), boost::test_tools::per_element());
  // 'z' has no piece: byte token 3 + 0x7A; the space before it stays a piece of its own.
  BOOST_TEST(t.encode("z", false) == (std::vector<int>{259, 3 + 0x7A}), boost::test_tools::per_element());
  BOOST_TEST(t.encode("", true) == (std::vector<int>{1}), boost::test_tools::per_element());
  // Decoding drops the encoder's leading space after BOS and turns byte tokens into bytes.
  BOOST_TEST(t.decode({259, 263, 3 + 0xC3, 3 + 0xA9}, 1) == "ab\xC3\xA9");
  fs::remove_all(dir);
}

// Real vocabulary: "Once upon a time" is BOS, ▁Once, ▁upon, ▁a, ▁time in the Llama-2 vocabulary;
// an emoji that has no piece falls back to its four UTF-8 bytes; the leading space is the ▁ piece
// 29871. Catches a missing dummy prefix, byte tokens chosen for ordinary characters (the file holds
// both), and decode/encode asymmetry.
BOOST_AUTO_TEST_CASE(tokenizer_real_vocabulary, *boost::unit_test::precondition(model_in_cache)) {
  Tokenizer t = Tokenizer::load(model_dir() + "/tokenizer.bin", 32000);
  BOOST_TEST(t.encode("Once upon a time", true) == (std::vector<int>{1, 9038, 2501, 263, 931}),
             boost::test_tools::per_element());
  BOOST_TEST(t.encode("\xF0\x9F\x98\x80", true) ==
                 (std::vector<int>{1, 29871, 3 + 0xF0, 3 + 0x9F, 3 + 0x98, 3 + 0x80}),
             boost::test_tools::per_element());
  // ',' exists both as byte token 3 + 0x2C and as an ordinary piece; the piece must be used.
  for (int id : t.encode("Lily, \"Hi!\" said Tom.", false)) BOOST_TEST((id < 3 || id > 258));
  for (const std::string s : {"Once upon a time", "Lily, \"Hi!\" said Tom.", "caf\xC3\xA9 \xF0\x9F\x98\x80 1+1=2"}) {
    std::vector<int> ids = t.encode(s, true);
    BOOST_TEST(t.decode(std::vector<int>(ids.begin() + 1, ids.end()), 1) == s);
  }
}

// Load-time checks name the file and what is wrong. Catches silently accepting a tokenizer for a
// different vocabulary size, a truncated file or a zero-length piece.
BOOST_AUTO_TEST_CASE(tokenizer_rejects_bad_files) {
  fs::path dir = scratch_dir();
  std::vector<uint8_t> good = tokenizer_bytes({{" ", -1}});
  write_bytes(dir / "good.bin", good);
  BOOST_TEST(contains(expect_invalid([&] { Tokenizer::load((dir / "good.bin").string(), 261); }),
                      "truncated"));
  BOOST_TEST(contains(expect_invalid([&] { Tokenizer::load((dir / "good.bin").string(), 259); }),
                      "trailing bytes"));
  std::vector<uint8_t> cut(good.begin(), good.end() - 1);
  write_bytes(dir / "cut.bin", cut);
  BOOST_TEST(contains(expect_invalid([&] { Tokenizer::load((dir / "cut.bin").string(), 260); }),
                      (dir / "cut.bin").string()));
  std::vector<uint8_t> zero = good;
  std::memset(zero.data() + 8, 0, 4);  // token 0's length
  write_bytes(dir / "zero.bin", zero);
  BOOST_TEST(contains(expect_invalid([&] { Tokenizer::load((dir / "zero.bin").string(), 260); }),
                      "token 0"));
  BOOST_TEST(contains(expect_invalid([&] { Tokenizer::load((dir / "missing.bin").string(), 260); }),
                      "cannot open"));
  fs::remove_all(dir);
}

// ---- RoPE ---------------------------------------------------------------------------------------
// head_dim 4 at position 1: pair 0 turns by 1 rad, pair 1 by 10000^(-2/4) = 0.01 rad; values from
// the closed form. Catches half-split (NeoX) pairing, a wrong exponent, or the sign of the rotation.
BOOST_AUTO_TEST_CASE(rope_hand_computed) {
  float x[8] = {1, 0, 0, 1, 1, 0, 0, 1};  // two heads
  apply_rope(x, 2, 4, 1);
  const double want[4] = {0.5403023058681398, 0.8414709848078965, -0.009999833334166664,
                          0.9999500004166653};
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 4; ++i) BOOST_TEST(std::abs(x[4 * h + i] - want[i]) < 3e-7);
  float y[2] = {2, -1};  // head_dim 2, position 3: (2 cos3 + sin3, 2 sin3 - cos3)
  apply_rope(y, 1, 2, 3);
  BOOST_TEST(std::abs(y[0] - (2 * std::cos(3.0) + std::sin(3.0))) < 1e-6);
  BOOST_TEST(std::abs(y[1] - (2 * std::sin(3.0) - std::cos(3.0))) < 1e-6);
  float z[4] = {0.3f, -0.7f, 1.5f, 2.5f};  // position 0 is the identity, bit for bit
  const float z0[4] = {0.3f, -0.7f, 1.5f, 2.5f};
  apply_rope(z, 1, 4, 0);
  BOOST_TEST(std::memcmp(z, z0, sizeof z) == 0);
}

// ---- Checkpoint loader --------------------------------------------------------------------------
namespace {

// A tiny random llama2.c checkpoint (explicit seed); GQA with 4 q heads over 2 kv heads.
std::vector<uint8_t> tiny_checkpoint(int32_t vocab, ModelConfig* cfg_out = nullptr) {
  ModelConfig c;
  c.dim = 16; c.hidden_dim = 24; c.n_layers = 2; c.n_heads = 4; c.n_kv_heads = 2;
  c.vocab_size = std::abs(vocab); c.seq_len = 12; c.shared_classifier = vocab > 0;
  std::vector<uint8_t> b;
  for (int32_t v : {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, vocab, c.seq_len})
    put<int32_t>(b, v);
  uint64_t n = checkpoint_float_count(c);
  uint32_t s = 12345;  // LCG, explicit seed
  for (uint64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    put<float>(b, float(int32_t(s >> 8) - (1 << 23)) / float(1 << 24));  // [-0.5, 0.5)
  }
  if (cfg_out) *cfg_out = c;
  return b;
}

}  // namespace

// Size and header checks name the file and the implied size; a NaN weight is reported with its
// offset. Catches reading past the end, a classifier-sharing mix-up (negative vocab) and garbage
// headers reaching the forward pass.
BOOST_AUTO_TEST_CASE(checkpoint_rejects_bad_files) {
  fs::path dir = scratch_dir();
  std::vector<uint8_t> good = tiny_checkpoint(300);
  write_bytes(dir / "good.bin", good);
  Checkpoint ck = load_checkpoint((dir / "good.bin").string());
  BOOST_TEST(ck.cfg.kv_dim() == 8);
  BOOST_TEST(ck.classifier == ck.tok_emb);
  BOOST_TEST(ck.sha256 == sha256_hex(good.data(), good.size()));

  std::vector<uint8_t> unshared = tiny_checkpoint(-300);  // classifier stored separately
  write_bytes(dir / "unshared.bin", unshared);
  Checkpoint cu = load_checkpoint((dir / "unshared.bin").string());
  BOOST_TEST(cu.classifier == cu.rms_final + 16 + 12 * 4);  // after rms_final and freq_cis
  // The same bytes with a positive vocab are 300*16 floats too long.
  std::vector<uint8_t> flipped = unshared;
  int32_t pos_vocab = 300;
  std::memcpy(flipped.data() + 20, &pos_vocab, 4);
  write_bytes(dir / "flipped.bin", flipped);
  BOOST_TEST(contains(expect_invalid([&] { load_checkpoint((dir / "flipped.bin").string()); }),
                      "implies"));

  std::vector<uint8_t> bad_heads = good;
  int32_t heads = 5;  // does not divide dim 16
  std::memcpy(bad_heads.data() + 12, &heads, 4);
  write_bytes(dir / "heads.bin", bad_heads);
  BOOST_TEST(contains(expect_invalid([&] { load_checkpoint((dir / "heads.bin").string()); }),
                      "n_heads"));

  std::vector<uint8_t> nan = good;
  float qnan = std::nanf("");
  std::memcpy(nan.data() + 28 + 4 * 100, &qnan, 4);
  write_bytes(dir / "nan.bin", nan);
  BOOST_TEST(contains(expect_invalid([&] { load_checkpoint((dir / "nan.bin").string()); }),
                      "weight 100"));

  write_bytes(dir / "short.bin", std::vector<uint8_t>(good.begin(), good.begin() + 20));
  BOOST_TEST(contains(expect_invalid([&] { load_checkpoint((dir / "short.bin").string()); }),
                      "header"));
  fs::remove_all(dir);
}

// Greedy capture on the tiny GQA model: shapes follow [T, heads, head_dim], the prompt + new
// tokens bound is enforced, and position 0's k equals bf16 of the un-rotated projection (RoPE at
// position 0 is the identity) computed here independently. Catches q/k/v capture at the wrong
// point (pre-norm, pre-projection) and kv head counts taken from q.
BOOST_AUTO_TEST_CASE(capture_tiny_gqa_model) {
  fs::path dir = scratch_dir();
  ModelConfig c;
  write_bytes(dir / "m.bin", tiny_checkpoint(300, &c));
  std::vector<std::pair<std::string, float>> extra;
  for (int i = 0; i < 41; ++i) extra.emplace_back("w" + std::to_string(i), -float(i));
  write_bytes(dir / "t.bin", tokenizer_bytes(extra));
  Checkpoint ck = load_checkpoint((dir / "m.bin").string());
  Tokenizer tok = Tokenizer::load((dir / "t.bin").string(), 300);
  CapturedSequence s = generate_greedy(ck, tok, "ab", 5);
  const int T = s.num_tokens();
  BOOST_TEST(s.prompt_tokens == 4);  // BOS, ' ', 'a', 'b' (bytes: no pieces for them)
  BOOST_TEST(T <= 9);
  for (int l = 0; l < c.n_layers; ++l) {
    BOOST_TEST(s.q[size_t(l)].size() == size_t(T * c.n_heads * 4));
    BOOST_TEST(s.k[size_t(l)].size() == size_t(T * c.n_kv_heads * 4));
    BOOST_TEST(s.v[size_t(l)].size() == size_t(T * c.n_kv_heads * 4));
  }
  // Layer 0, position 0: k = Wk * rmsnorm(embedding[BOS]), in float, sequential sums.
  const float* e = ck.at(ck.tok_emb) + 1 * c.dim;
  float ss = 0;
  for (int j = 0; j < c.dim; ++j) ss += e[j] * e[j];
  ss = 1.0f / std::sqrt(ss / float(c.dim) + 1e-5f);
  std::vector<float> xn(size_t(c.dim));
  for (int j = 0; j < c.dim; ++j) xn[size_t(j)] = ck.at(ck.rms_att)[j] * (ss * e[j]);
  for (int r = 0; r < c.kv_dim(); ++r) {
    float acc = 0;
    for (int j = 0; j < c.dim; ++j) acc += ck.at(ck.wk)[r * c.dim + j] * xn[size_t(j)];
    BOOST_TEST(s.k[0][size_t(r)] == tqref::f32_to_bf16(acc));
  }
  BOOST_TEST(contains(expect_invalid([&] { generate_greedy(ck, tok, "ab", 9); }), "seq_len"));
  fs::remove_all(dir);
}

// ---- The real checkpoint ------------------------------------------------------------------------
// stories15M continues "Once upon a time" greedily with ", there was a little girl named Lily."
// (known from the llama2.c reference run). Catches any error in the forward pass large enough to
// change an argmax: RoPE pairing, GQA mapping, norm placement, SwiGLU, classifier sharing.
BOOST_AUTO_TEST_CASE(real_model_known_continuation,
                     *boost::unit_test::precondition(model_in_cache)) {
  Checkpoint ck = load_checkpoint(model_dir() + "/model.bin");
  BOOST_TEST(ck.sha256 == "cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a");
  Tokenizer tok = Tokenizer::load(model_dir() + "/tokenizer.bin", ck.cfg.vocab_size);
  CapturedSequence s = generate_greedy(ck, tok, "Once upon a time", 12);
  BOOST_TEST_MESSAGE("generated: " << s.generated_text);
  BOOST_TEST(s.generated_text.rfind(", there was a little girl named Lily.", 0) == 0);
  BOOST_TEST(s.num_tokens() == 5 + 12);
  BOOST_TEST(s.q[5].size() == size_t(17 * 288));
  BOOST_TEST(contains(expect_invalid([&] { generate_greedy(ck, tok, "Once upon a time", 252); }),
                      "seq_len 256"));
}

// ---- Trace schema ---------------------------------------------------------------------------------
namespace {

// A valid trace with GQA (4 q heads, 2 kv heads), head_dim 20, 2 layers, sequences of 3 and 5.
Trace small_trace() {
  Trace t;
  t.meta = {"synthetic", "test_trace", 2, 4, 2, 20, 1.0 / std::sqrt(20.0), {{"command", "test"}}};
  uint32_t s = 7;  // explicit seed
  for (int T : {3, 5}) {
    TraceSequence q;
    q.name = "seq_T" + std::to_string(T);
    q.num_tokens = T;
    for (int i = 0; i < T; ++i) q.token_ids.push_back(i + 1);
    q.prompt_tokens = 1;
    q.attrs = {{"prompt", "x"}};
    auto fill = [&](int heads) {
      std::vector<uint16_t> v(size_t(T * heads * 20));
      for (auto& b : v) {
        s = s * 1664525u + 1013904223u;
        b = tqref::f32_to_bf16(float(int32_t(s >> 8) - (1 << 23)) / float(1 << 22));
      }
      return v;
    };
    for (int l = 0; l < 2; ++l) {
      q.q.push_back(fill(4));
      q.k.push_back(fill(2));
      q.v.push_back(fill(2));
    }
    t.sequences.push_back(q);
  }
  return t;
}

}  // namespace

// Round trip through write_trace/read_trace, and no temporary file left behind. Catches a
// validator that rejects legal GQA or mixed-length files and a lossy writer.
BOOST_AUTO_TEST_CASE(trace_round_trip_gqa) {
  fs::path dir = scratch_dir();
  Trace t = small_trace();
  std::string p = (dir / "ok.h5").string();
  write_trace(p, t);
  std::vector<std::string> problems = validate_trace(p);
  for (auto& m : problems) BOOST_TEST_MESSAGE(m);
  BOOST_TEST(problems.empty());
  Trace r = read_trace(p);
  BOOST_TEST(r.sequences.size() == 2u);
  BOOST_TEST(r.sequences[1].num_tokens == 5);
  BOOST_TEST(r.sequences[1].k[1] == t.sequences[1].k[1]);
  BOOST_TEST(r.sequences[0].q[0] == t.sequences[0].q[0]);
  BOOST_TEST(r.meta.num_kv_heads == 2);
  BOOST_TEST(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  fs::remove_all(dir);
}

// Each defect alone makes the validator fail with a message naming the object. Catches a
// validator that only checks presence, or that stops at the first sequence.
BOOST_AUTO_TEST_CASE(trace_validator_rejects_defects) {
  fs::path dir = scratch_dir();
  struct Defect {
    const char* name;
    const char* expect;  // part of the message
    std::function<void(Trace&)> apply;
  };
  const std::vector<Defect> defects = {
      {"nan", "NaN or Inf", [](Trace& t) { t.sequences[1].v[1][37] = 0x7FC0; }},
      {"inf", "NaN or Inf", [](Trace& t) { t.sequences[0].q[0][5] = 0xFF80; }},
      {"all_zero", "every value is zero",
       [](Trace& t) { std::fill(t.sequences[1].k[0].begin(), t.sequences[1].k[0].end(), 0x8000); }},
      {"negative_token", "token ids are >= 0", [](Trace& t) { t.sequences[1].token_ids[2] = -4; }},
      {"prompt_tokens", "prompt_tokens", [](Trace& t) { t.sequences[0].prompt_tokens = 4; }},
  };
  for (const Defect& d : defects) {
    Trace t = small_trace();
    d.apply(t);
    std::string p = (dir / (std::string(d.name) + ".h5")).string();
    write_trace(p, t);
    std::vector<std::string> problems = validate_trace(p);
    BOOST_TEST_CONTEXT(d.name) {
      BOOST_TEST(!problems.empty());
      if (!problems.empty()) BOOST_TEST(contains(problems[0], d.expect));
    }
  }
  // Structural defects written by hand: wrong shape, missing layer, bad encoding, bad geometry.
  auto base = [&](const std::string& name, int kv_heads) {
    tqref::h5::Node f = tqref::h5::Node::create_file((dir / name).string());
    f.set_attr("schema", std::string("tqref.trace"));
    f.set_attr("schema_version", int64_t(1));
    f.set_attr("model_name", std::string("m"));
    f.set_attr("producer", std::string("p"));
    f.set_attr("encoding", std::string("bf16"));
    f.set_attr("num_layers", int64_t(1));
    f.set_attr("num_q_heads", int64_t(3));
    f.set_attr("num_kv_heads", int64_t(kv_heads));
    f.set_attr("head_dim", int64_t(4));
    f.set_attr("attn_scale", 0.5);
    return f;
  };
  std::vector<uint16_t> ones(2 * 3 * 4, 0x3F80);
  {
    auto f = base("shape.h5", 1);
    auto l = f.create_group("sequences").create_group("s");
    l.set_attr("num_tokens", int64_t(2));
    auto g = l.create_group("layer_0");
    g.write("q", ones, {2, 3, 4}, "bf16");
    g.write("k", ones, {2, 3, 4}, "bf16");  // should be [2, 1, 4]
    g.write("v", std::vector<uint16_t>(8, 0x3F80), {2, 1, 4}, "fp16");
    auto extra = l.create_group("layer_1");  // num_layers is 1
  }
  std::vector<std::string> p = validate_trace((dir / "shape.h5").string());
  std::string all;
  for (auto& m : p) all += m + "\n";
  BOOST_TEST(contains(all, "/sequences/s/layer_0/k: shape [2, 3, 4]; expected [2, 1, 4]"));
  BOOST_TEST(contains(all, "layer_0/v: attribute 'encoding' is \"fp16\""));
  BOOST_TEST(contains(all, "/sequences/s/layer_1: unexpected object"));
  {
    auto f = base("geometry.h5", 2);  // 3 q heads over 2 kv heads
    f.create_group("sequences");
  }
  BOOST_TEST(contains(validate_trace((dir / "geometry.h5").string()).at(0), "not a multiple"));
  {
    auto f = base("missing_layer.h5", 1);
    f.create_group("sequences").create_group("s").set_attr("num_tokens", int64_t(2));
  }
  BOOST_TEST(contains(validate_trace((dir / "missing_layer.h5").string()).at(0), "layer_0: group missing"));
  {
    tqref::h5::Node f = tqref::h5::Node::create_file((dir / "not_trace.h5").string());
    f.set_attr("schema", std::string("tqref.golden"));
  }
  BOOST_TEST(contains(validate_trace((dir / "not_trace.h5").string()).at(0), "expected \"tqref.trace\""));
  BOOST_TEST(contains(validate_trace((dir / "absent.h5").string()).at(0), "not a readable HDF5 file"));
  fs::remove_all(dir);
}

// ---- The committed trace ------------------------------------------------------------------------
// data/traces/stories15M.h5 follows the schema, holds all 6 layers of the real model's geometry and
// starts with the known continuation. With the checkpoint present, the first sequence is captured
// again and must equal the committed bits: catches an unnoticed change of the forward pass (or of
// libm) since the file was made.
BOOST_AUTO_TEST_CASE(committed_trace_is_valid_and_reproducible) {
  std::vector<std::string> problems = validate_trace(kCommittedTrace);
  for (auto& m : problems) BOOST_TEST_MESSAGE(m);
  BOOST_REQUIRE(problems.empty());
  Trace t = read_trace(kCommittedTrace);
  BOOST_TEST(t.meta.num_layers == 6);
  BOOST_TEST(t.meta.num_q_heads == 6);
  BOOST_TEST(t.meta.num_kv_heads == 6);
  BOOST_TEST(t.meta.head_dim == 48);
  BOOST_TEST(t.sequences.size() >= 3u);
  const TraceSequence& s0 = t.sequences.at(0);
  std::string gen;
  for (auto& [k, v] : s0.attrs)
    if (k == "generated_text") gen = v;
  BOOST_TEST(gen.rfind(", there was a little girl named Lily.", 0) == 0);
  for (const TraceSequence& s : t.sequences) BOOST_TEST(s.token_ids.at(0) == kTokBos);

  if (!real_model_present()) return;
  Checkpoint ck = load_checkpoint(model_dir() + "/model.bin");
  Tokenizer tok = Tokenizer::load(model_dir() + "/tokenizer.bin", ck.cfg.vocab_size);
  std::string prompt;
  for (auto& [k, v] : s0.attrs)
    if (k == "prompt") prompt = v;
  CapturedSequence c = generate_greedy(ck, tok, prompt, s0.num_tokens - s0.prompt_tokens);
  BOOST_TEST(std::vector<int32_t>(c.token_ids.begin(), c.token_ids.end()) == s0.token_ids);
  for (int l = 0; l < 6; ++l) {
    BOOST_TEST(c.q[size_t(l)] == s0.q[size_t(l)]);
    BOOST_TEST(c.k[size_t(l)] == s0.k[size_t(l)]);
    BOOST_TEST(c.v[size_t(l)] == s0.v[size_t(l)]);
  }
}
