// CPU models of the three mutants (docs/mutants.md) that ordinary data cannot catch, so that the
// golden data is shown to catch them without a GPU: the builders report how many expected
// elements each one changes (the `exercises` attribute) and faults.cpp injects them.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "io/golden_case.h"
#include "tqref/ex2.h"

namespace tqref::cases {

// Mutant 5: V used when factor >= THRESH. For a positive THRESH this is exactly the spec's
// `factor > T'` with T' the next binary32 below THRESH. Returns the decode case's output buffer.
std::vector<uint16_t> decode_output_thresh_ge(const golden::GoldenCase& c, const Ex2Profile& ex2);

// The case's decode output under a named variant of the model (tqref/variant.h).
std::vector<uint16_t> decode_output_variant(const golden::GoldenCase& c, const Ex2Profile& ex2,
                                            const std::string& variant);
// Mutant 14: EXPF without the split below y = -126 (the variant expf-no-split, tqref/variant.h).
std::vector<uint16_t> decode_output_expf_no_split(const golden::GoldenCase& c,
                                                  const Ex2Profile& ex2);

// Mutant 13 on the writer: replaces the scale byte of every group of every written token in
// v_cache (the writer case's pool after a correct run) with the FMA-contracted writer's byte.
// Returns the number of groups whose byte changed.
uint64_t writer_fma_contract_scales(const golden::GoldenCase& c, std::span<uint8_t> v_cache);

// Mutant 9 on the writer: the fp8 scale byte truncated toward zero (the kernel's
// `if (sb != 0 && fp8(sb) > s) sb -= 1` after the nearest-even encoding), written into the scale
// bytes of every written token in v_cache (a correct run's pool). Returns the groups changed.
uint64_t writer_scale_rz_scales(const golden::GoldenCase& c, std::span<uint8_t> v_cache);

// Mutant 2 on the writer: code index counts BD[j] < y (strict), so a value on a bound goes one
// code down; codes and, through rsq, scale bytes of every written token replaced in v_cache.
// Returns the groups changed.
uint64_t writer_bound_strict(const golden::GoldenCase& c, std::span<uint8_t> v_cache);

// Invariance mutant 20 (writer_contiguous, docs/mutants.md): the writer takes slot_mapping[0] + t
// for token t when slot_mapping[0] >= 0 and the last and the middle token (t = T-1, T/2) sit at
// slot_mapping[0] + t (the batch looks like one contiguous run from three samples), else
// slot_mapping[t]. Returns the slots it writes.
std::vector<int64_t> contiguous_shortcut_slots(std::span<const int64_t> slot_mapping);

// Elements in which two output buffers differ.
uint64_t count_differing(std::span<const uint16_t> a, std::span<const uint16_t> b);

}  // namespace tqref::cases
