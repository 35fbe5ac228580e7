// Fault injection for `tqref check --inject`: a Backend decorator that damages the bytes another
// backend produced, the way a specific kernel bug would, before comparison. Tests use it to prove
// that each kind of bug is detected and classified (compare.h categories).
#pragma once
#include <memory>
#include <string>

#include "judge/backend.h"
#include "tqref/ex2.h"

namespace tqref::testing {

enum class Fault {
  none,
  flip_code_bit,   // writer: one bit of the first written V code row        -> v-code
  wrong_scale,     // writer: the first written V scale byte off by one code  -> v-scale
  neighbour_slot,  // writer: a byte of an unwritten K slot next to a written one;
                   // decode: a row of an L == 0 sequence                    -> untouched-modified
  guard,           // any: the first byte after the first buffer             -> guard
  flip_skip,       // decode: output of a kernel that never skips, so it reads the poisoned
                   // V groups of skipped positions                          -> skipped-v-read
  unwritten_row,   // writer: the first written K row left as it was;
                   // decode: the first row of a non-empty sequence unwritten -> row-not-written
  // Mirrors of kernel mutants (docs/mutants.md, cases/mutant_models.h) that only crafted data
  // catches; they replace the whole output with the mutant's model result:
  thresh_ge,       // decode: V used when factor >= THRESH (mutant 5); caught only by a factor
                   // exactly at THRESH, which reads a poisoned skipped V group -> skipped-v-read
  expf_no_split,   // decode: EXPF without the split below y = -126 (mutant 14)   -> output-value
  writer_fma,      // writer: nsq and rsq contracted into FMAs (mutant 13)        -> v-scale
  // Mirrors of the invariance mutants (docs/mutants.md, 18-20) and a stale-state kernel: they
  // break level I (level_i.h); the first, third and fourth pass W/D on the committed suites.
  dense_large_batch,  // decode: a launch of more than 32 sequences reads V of every position
                      // (the model with THRESH = -1; mutant 18)           -> level I placement
  block_parity_lsb,   // decode: the lowest output bit flipped in the rows whose last position
                      // lies in an odd physical block (mutant 19)          -> output-value, level I blocks
  writer_contiguous,  // writer: token t written to slot_mapping[0] + t when the first, middle
                      // and last slots look contiguous (mutant 20)        -> level I token-order
  repeat_lsb,         // decode: the lowest output bit flipped when the same launch (same bytes)
                      // ran before: state left by an earlier launch       -> level I repeat
};
inline constexpr int kNumFaults = 14;

const char* fault_name(Fault f);                  // "flip-code-bit", ...
bool parse_fault(const std::string& s, Fault* f);
// The category compare_case must report for the fault, "" when it does not apply to the kind.
const char* fault_category(Fault f, golden::CaseKind k);
// The kernel mutant a fault mirrors (5, 13, 14 and the invariance mutants 18-20), 0 for the
// others.
int fault_mutant(Fault f);
// True for the faults made to break level I (dense-large-batch, block-parity-lsb,
// writer-contiguous, repeat-lsb).
bool fault_breaks_invariance(Fault f);
// "none, flip-code-bit, ...": the allowed values of --inject.
std::string fault_names_list();

std::unique_ptr<judge::Backend> make_fault_backend(std::unique_ptr<judge::Backend> inner, Fault f,
                                                   const Ex2Profile* ex2);

}  // namespace tqref::testing
