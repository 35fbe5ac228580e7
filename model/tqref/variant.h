// Variants of the contract (docs/variants.md): named, one-change deviations of the writer's and the
// decoder's operation order, for golden data of a real build (`nvcc-fmad`, `ftz`), for coverage
// (every rounding step one ulp off) and for pinning a failing kernel to what it does differently.
// The contract itself is the variant "contract". The kernel-order models take a rules policy
// (model/rules.h): ContractRules, whose operations are the contract's, or VariantRules, which
// reads one Variant; the readable scalar model is the same code for both.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tqref/approx.h"
#include "tqref/format.h"

namespace tqref {

// Every rounding step of the contract's order (docs/spec.md sections 4 and 5, "Rounding steps"):
// one entry per operation site whose result is rounded, named as in the spec.
enum class Step : uint8_t {
  // writer (section 4)
  w_nsq_square,   // x*x of the squared norm nsq
  w_nsq_add,      // nsq + x*x
  w_inv_div,      // MAX / amax
  w_scaled_mul,   // x * inv, the value the code index compares
  w_rsq_square,   // c*c of the codebook norm rsq
  w_rsq_add,      // rsq + c*c
  w_rn_sqrt,      // sqrt(rsq)
  w_nsq_sqrt,     // sqrt(nsq)
  w_scale_div,    // sqrt(nsq) / rn
  w_fallback_div, // amax / MAX (never reached: docs/spec.md says why)
  w_scale_fp8,    // the fp8 E4M3 encode of s (one fp8 step)
  // decoder (section 5)
  d_qk_mul,        // q[d] * k[d]
  d_pair_add,      // the sum of a lane's two products
  d_part_add,      // a lane's running partial sum
  d_butterfly_add, // each xor-butterfly sum
  d_score_mul,     // butterfly sum * inv_sqrt_d
  d_max_sub,       // m - mn and sc - mn, EXPF's argument
  d_expf_mul,      // EXPF: x * log2(e)
  d_ex2,           // EXPF: the EX2 unit's result
  d_expf_half,     // EXPF split: y * 0.5
  d_expf_square,   // EXPF split: r * r
  d_l_mul,         // l * eo (batch and single)
  d_l_add,         // l + ef
  d_o_mul,         // o * eo (batch and single)
  d_ev_mul,        // ef * v (batch and single)
  d_o_add,         // o + ef*v
  d_merge_mul,     // a.l*fa, o.l*fo, a.o*fa, o.o*fo in the merge
  d_merge_add,     // their sums
  d_inv_div,       // 1 / l
  d_out_mul,       // o * inv
  d_out_bf16,      // the bf16 encode of the output (one bf16 step)
  d_codebook_fp16, // fp16(CB[c]) (one fp16 step)
  d_dequant_mul,   // fp16(CB) * gs
  none,
};
inline constexpr int kNumSteps = static_cast<int>(Step::none);
const char* step_name(Step s);
bool step_is_writer(Step s);

// `a*b + c` sites an FMA may contract, each on its own; `_ab` / `_cd` name which product of
// `a*b + c*d` is fused (the other stays a rounded product).
enum class Fusion : uint8_t {
  w_nsq,          // nsq = fma(x, x, nsq)
  w_rsq,          // rsq = fma(c, c, rsq)
  d_pair_ab,      // pair = fma(q0, k0, q1*k1)
  d_pair_cd,      // pair = fma(q1, k1, q0*k0)
  d_batch_l,      // l = fma(l, eo, ef0), the batch's first l update
  d_batch_o_ab,   // o = fma(o, eo, ef0*v0), the batch's first o update
  d_batch_o_cd,   // o = fma(ef0, v0, o*eo)
  d_batch_ev,     // o = fma(ef_b, v_b, o), b = 1..3
  d_single_l,     // l = fma(l, eo, en)
  d_single_o_ab,  // o = fma(o, eo, en*v)
  d_single_o_cd,  // o = fma(en, v, o*eo)
  d_merge_l_ab,   // l = fma(a.l, fa, o.l*fo)
  d_merge_l_cd,   // l = fma(o.l, fo, a.l*fa)
  d_merge_o_ab,   // o = fma(a.o, fa, o.o*fo)
  d_merge_o_cd,   // o = fma(o.o, fo, a.o*fa)
  count,
};
inline constexpr int kNumFusions = static_cast<int>(Fusion::count);
const char* fusion_name(Fusion f);  // "nsq", "pair-ab", ... (the variant is "fma:<name>")

// One deviation from the contract; the defaults are the contract.
struct Variant {
  std::string name = "contract";
  uint32_t fused = 0;              // bit i: Fusion(i) contracted
  Step perturbed = Step::none;     // this step's result moved by `ulps` steps of its format
  int ulps = 0;
  bool ftz = false;                // every f32 operation flushes subnormal inputs and results
  bool expf_unsplit = false;       // EXPF without the split below -126 (EX2 flushes to +0)
  bool no_batches = false;         // every position a single
  bool merge_sequential = false;   // warp 0 absorbs warps 1..7 in turn
  bool butterfly_ascending = false;// offsets 1, 2, 4, 8, 16
  bool fp32_codebook = false;      // dequant with CB in fp32, not fp16(CB)
  bool other_lane_layout = false;  // the other HDIM's lane layout for the score's partial sums
  // The quotients (writer's MAX / amax, sqrt(nsq) / rn, fallback; decoder's 1 / l) and the
  // writer's square roots as a build without -prec-div / -prec-sqrt computes them (tqref/approx.h).
  Division division = Division::rn;
  bool sqrt_approx = false;
  bool fuses(Fusion f) const { return (fused >> static_cast<int>(f)) & 1u; }
  bool is_contract() const;
};

enum class VariantKernel : uint8_t { writer, decoder, both };

// What a named variant is for (docs/variants.md): an exact model of a real build, or a
// perturbation that exists so that coverage and pinning can name a step.
struct VariantInfo {
  Variant v;
  VariantKernel kernel;
  bool models_build;    // true: the bits of a build (nvcc-fmad, ftz, expf-no-split, ...)
  std::string what;
};

// Every named variant except the per-step perturbations ("ulp+:<step>", "ulp-:<step>"), which
// parse_variant accepts for every step; "contract" first.
const std::vector<VariantInfo>& named_variants();
// The variant of a name: a named one, "ulp+:<step>" / "ulp-:<step>", or names joined by '+'
// ("nvcc-fmad+ftz": the union of their changes; at most one perturbed step). Throws
// std::invalid_argument naming the allowed names.
Variant parse_variant(const std::string& name);
// Whether the variant runs on the measured approximate units (tqref/approx.h): its models need
// approx_units().
bool needs_approx_units(const Variant& v);
// Whether the variant changes anything the writer / the decoder computes.
bool changes_writer(const Variant& v);
bool changes_decoder(const Variant& v);

}  // namespace tqref
