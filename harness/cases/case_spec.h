// What one entry of a suite asks for: the docs/spec.md section 7 dimensions of one case (writer) or of one
// linked writer + decode pair. Suites are lists of CaseSpec; builders turn a spec and a seed into
// GoldenCases.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/golden_case.h"

namespace tqref::cases {

// Value distributions of K, V and q (all stored as bf16).
enum class Dist {
  gaussian,          // N(0, 1)
  student_t,         // Student-t, 3 degrees of freedom (heavy tails)
  outlier_channels,  // N(0, 1) with a few channels scaled by 50 (as in real K/V activations)
  constant_groups,   // V groups of 16 equal values; K, q Gaussian
  special_groups,    // V groups: zero, NaN, +-Inf, one huge element, fp8-underflowing and
                     // -saturating scales, subnormal scales (writer cases only)
  adversarial_skip,  // scores spread over ~30 so most positions are skipped; V large (x1000)
                     // at low-score positions, so every skip decision changes the output bits
  threshold,         // scores built through the EX2 profile so that factors land exactly at,
                     // just below and just above THRESH (inv_sqrt_d = 1, one-hot q)
  ties,              // K rows repeat, so scores tie the running maximum
  tiny_rescale,      // decode: scores ~88-95 apart, the higher positions with all-zero V, so a
                     // rescale factor (in-warp eo, merge a or c) lies in EXPF's split range
                     // [2^-149, 2^-126) and multiplies a nonzero o that survives to the output
                     // (mutant 14); V x1000 elsewhere
  fma_sensitive,     // V groups whose scale byte changes when nvcc contracts the writer's nsq
                     // and rsq sums into FMAs (mutant 13); K Gaussian (cases/fma_groups.h)
  rounding_sensitive,  // V groups whose scale byte changes when the writer's sqrt(nsq) and
                       // sqrt(nsq)/rn are one ulp off, alternately up and down (build-flag
                       // mutants 25, 26: -prec-div=false, -prec-sqrt=false); K Gaussian
  step_sensitive,    // V groups that change a code or the scale byte under each writer entry of
                     // the coverage (every rounding step one step off, fma:rsq, nvcc-fmad, ftz;
                     // cases/step_groups.h), cycled through each row; K Gaussian
  cancelling,        // decode: per sequence one K row k and one V row v; each position takes
                     // (3k, 0), (k, v), (k, -v) or (k/4 + noise, 0), so contributions of equal
                     // factor cancel exactly in the contract's o and an FMA's unrounded product
                     // leaves its rounding error as the whole output (docs/variants.md)
  overflow_pair,     // decode: q dims 0, 1 = 2^64, -2^64; in each sequence the middle position's
                     // K dims 0, 1 make one product of the score's first pair overflow to +Inf
                     // and the other -1.5 * 2^127 (the first product in even sequences, the
                     // second in odd), other dims 0: only an FMA of that pair keeps it finite
  rising_scores,     // decode: K = 0.3 * (pos / L) * q + small noise (even sequences; odd ones
                     // fall: (L - pos) / L), q heads of a kv group nearly equal: in rising rows
                     // every step raises the running maximum, so every l and o update rescales
                     // (eo < 1); in both the warps' maxima differ in the merge; V: one row per
                     // sequence of bf16-midpoint groups (cases/step_groups.h), Gaussian for turbo2v
  l_tie,             // decode: sequences of 64 positions whose l * eo makes the batch's first l
                     // update an fp32 tie and whose V puts o * (1/l) across a bf16 midpoint, so
                     // one rounding of that product decides output bits (cases/l_tie.h;
                     // inv_sqrt_d = 1, one-hot q)
  subnormal_rescale,  // decode: tiny_rescale's roles with scores ~83-85 apart (rescale factors in
                      // [2^-122, 2^-119], above EXPF's split) and V x 2^-8 at the lower
                      // positions, so the rescaled o is subnormal: flush-to-zero (ftz) changes
                      // the output, EXPF without the split (mutant 14) does not
};
inline constexpr int kNumDists = 17;
const char* dist_name(Dist d);
bool parse_dist(const std::string& s, Dist* d);

// Physical block assignment of the decode sequences.
enum class Layout { sequential, shuffled, shared };

// Where the case's blocks sit in the physical pool (docs/golden-schema.md, "Pools of production
// size"; cases/large_pool.h).
enum class PoolPlacement {
  dense,      // the pool is the case's blocks (every other suite)
  beyond_4g,  // a pool of more than 2^33 + 2^30 bytes, blocks straddling 2^31, 2^32 and 2^33
              // bytes in both pools and the pool's last block, ids in the millions
  max_id,     // a pool of 2^31 blocks: the largest int32 block id (writer, 1-slot blocks)
};
const char* layout_name(Layout l);
bool parse_layout(const std::string& s, Layout* l);

struct CaseSpec {
  golden::CaseKind kind = golden::CaseKind::writer;  // decode = a linked writer case + decode case
  Format format = Format::turbo3v;
  uint32_t head_dim = 128;           // decode: also the build's HDIM (128 or 256)
  uint32_t num_kv_heads = 2;
  uint32_t q_per_kv = 1;             // GQA ratio num_q_heads / num_kv_heads (decode)
  uint32_t block_size = 16;
  std::vector<int32_t> seq_lens;     // decode: one entry per sequence
  uint32_t num_tokens = 0;           // writer: tokens with a slot (padding tokens extra)
  uint32_t padding_tokens = 0;       // slot -1 tokens mixed in
  uint32_t sliding_window = 0;
  Layout layout = Layout::sequential;
  uint32_t key_pad = 0, value_pad = 0, q_pad = 0;  // extra elements per row (key_pad % 4 == 0)
  uint32_t v_data_pad = 0, v_block_pad = 0;        // extra bytes in the V block
  uint32_t spare_blocks = 1;         // pool blocks nobody uses (poison)
  uint32_t spare_table_entries = 1;  // block-table entries past the last used (out of range)
  Dist dist = Dist::gaussian;
  float threshold = kSparseVThreshold;  // decode: the build's THRESH (names get "_thr<bits>"
                                        // when it is not the default)
  PoolPlacement pool = PoolPlacement::dense;
  std::string label;                 // where the geometry comes from (a model name of
                                     // data/models/attention.yaml); appended to the case name
  // > 0: the builder draws the case from this many seeds in turn and keeps the first that
  // observes every entry of `observe` (cases/observe.h), else the one that observes most; with
  // `tell_apart`, the first that tells every pair of those variants apart, else the one that
  // tells most pairs apart (the case that settles a tie of the failure anatomy).
  uint32_t search_attempts = 0;
  std::vector<std::string> observe;  // coverage entry names; empty: every entry of the kernel
  std::vector<std::string> tell_apart;  // variant names (tqref/variant.h), two or more
};

// A search builds its first attempt alone (most searches stop there), then rounds of this many
// attempts at once, as OpenMP tasks that idle threads of the generator take (cases/build_decode.cpp);
// the attempts of a round are judged in order, so the case chosen is the one-at-a-time search's.
inline constexpr uint32_t kSearchRound = 4;

// The sequences a decode spec builds: threshold specs get fixed ones, 16 and 32 positions (one
// sequence at each probe chunk's start, cases/build_decode.cpp), whatever their seq_lens say.
std::vector<int32_t> built_seq_lens(const CaseSpec& s);

// "gaussian, student_t, ..., fma_sensitive": the allowed values of a `dist` key.
std::string dist_names_list();

// Readable, unique-with-index name: "0007_decode_turbo3v_hdim128_kv2_gqa4_bs16_L0-1-1031_..."
std::string spec_name(const CaseSpec& s, uint64_t index);

}  // namespace tqref::cases
