// The variant model (tqref/variant.h, model/rules.h; docs/variants.md): the variant policy with
// nothing to change reproduces the contract bit for bit (so a variant differs from the contract
// only by its own change), three variants equal older independent CPU models of the same
// deviation, and names parse or are refused with the allowed list.
#define BOOST_TEST_MODULE test_variants
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "cases/builders.h"
#include "cases/fma_groups.h"
#include "cases/l_tie.h"
#include "cases/observe.h"
#include "cases/rng.h"
#include "cases/step_groups.h"
#include "decode_case.h"
#include "rules.h"
#include "sm90_ex2.h"
#include "tqref/quantize.h"
#include "tqref/variant.h"

using namespace tqref;
using namespace tqref::test;

namespace {

std::vector<uint16_t> decode(const DecodeCase& dc, const Variant* v) {
  std::vector<uint16_t> out(uint64_t(dc.p.num_seqs) * dc.p.num_q_heads * dc.p.head_dim, 0xBEEF);
  if (v)
    paged_decode_model(dc.format, dc.q, dc.k_cache, dc.v_cache, out, dc.tables, dc.lens, dc.p,
                       sm90_profile(), *v);
  else
    paged_decode_model(dc.format, dc.q, dc.k_cache, dc.v_cache, out, dc.tables, dc.lens, dc.p,
                       sm90_profile());
  return out;
}

std::vector<DecodeCase> decode_cases() {
  std::vector<DecodeCase> v;
  for (const FormatTraits& t : kFormats)
    for (uint32_t hdim : {128u, 256u}) {
      CaseSpec c;
      c.format = t.format;
      c.hdim = hdim;
      c.lens = {1, 3, 17, 64, 113};  // singles only, batches and singles, several blocks
      c.window = hdim == 256 ? 50 : 0;
      c.seed = 7 + hdim + t.bits;
      v.push_back(make_case(c));
    }
  return v;
}

}  // namespace

// Catches a VariantRules member that is not the contract when its variant leaves it alone (an
// operand order, a merge partner, a lane layout, the dequant table): fma:nsq changes the writer
// only, so the decoder runs the whole variant policy with nothing to change.
BOOST_AUTO_TEST_CASE(decoder_variant_policy_without_a_decoder_change_is_the_contract) {
  const Variant writer_only = parse_variant("fma:nsq");
  BOOST_REQUIRE(!writer_only.is_contract() && !changes_decoder(writer_only));
  for (const DecodeCase& dc : decode_cases())
    BOOST_TEST((decode(dc, &writer_only) == decode(dc, nullptr)), "format " << traits(dc.format).name
                                                                   << " hdim " << dc.p.hdim);
}

// The same for the writer: no-batch changes the decoder only.
BOOST_AUTO_TEST_CASE(writer_variant_policy_without_a_writer_change_is_the_contract) {
  const Variant decoder_only = parse_variant("no-batch");
  BOOST_REQUIRE(!changes_writer(decoder_only));
  cases::Rng rng(3);
  for (const FormatTraits& t : kFormats)
    for (int i = 0; i < 2000; ++i) {
      uint16_t x[kGroupSize];
      for (uint16_t& e : x) e = f32_to_bf16(float(rng.gaussian() * (i % 7 ? 1.0 : 1e-20)));
      QuantizedGroup a, b;
      quantize_groups(t, x, 1, &a);
      quantize_groups(t, x, 1, &b, decoder_only);
      BOOST_TEST(a.scale_byte == b.scale_byte);
      BOOST_TEST(std::equal(a.codes, a.codes + kGroupSize, b.codes));
    }
}

// Catches a variant EXPF that is not mutant 14's (EX2 of f32(x * log2 e) for every x, so every
// result below 2^-126 is +0) or a contract EXPF of the policy that is not Ex2Profile::expf, on
// arguments across the split (y from -200 to 0, and subnormal and zero x).
BOOST_AUTO_TEST_CASE(expf_of_the_policies) {
  const Ex2Profile& ex2 = sm90_profile();
  const Variant unsplit = parse_variant("expf-no-split");
  const rules::VariantRules vr(unsplit);
  const rules::ContractRules cr;
  std::vector<float> xs = {-0.0f, 0.0f, -1e-40f, -87.0f, -87.4f, -87.5f, -100.0f, -103.2f, -138.0f};
  for (int i = 0; i < 4000; ++i) xs.push_back(-0.035f * float(i));
  for (float x : xs) {
    BOOST_TEST(f32_bits(cr.expf(ex2, x)) == f32_bits(ex2.expf(x)), "x " << x);
    const float y = x * f32_from_bits(rules::kLog2eBits);
    BOOST_TEST(f32_bits(vr.expf(ex2, x)) == f32_bits(ex2.ex2(y)), "x " << x);
  }
}

// Catches a writer FMA or ulp variant that differs from the CPU models the fma_sensitive and
// rounding_sensitive groups were searched with (cases/fma_groups.h), on those groups.
BOOST_AUTO_TEST_CASE(writer_variants_equal_the_group_search_models) {
  cases::Rng rng(11);
  const Variant fma = parse_variant("fma:nsq+fma:rsq");
  for (const FormatTraits& t : kFormats)
    for (int i = 0; i < 8; ++i) {
      uint16_t x[kGroupSize];
      cases::fma_sensitive_group(t, rng, x);
      QuantizedGroup q;
      quantize_groups(t, x, 1, &q, fma);
      BOOST_TEST(q.scale_byte == cases::scale_byte_fma_contracted(t, x));
      for (int dir : {1, -1}) {
        cases::rounding_sensitive_group(t, rng, dir, x);
        quantize_groups(t, x, 1, &q, parse_variant(dir > 0 ? "ulp+:w-scale-div" : "ulp-:w-scale-div"));
        BOOST_TEST(q.scale_byte == cases::scale_byte_perturbed(t, x, cases::ScaleOp::quotient, dir));
        quantize_groups(t, x, 1, &q, parse_variant(dir > 0 ? "ulp+:w-nsq-sqrt" : "ulp-:w-nsq-sqrt"));
        BOOST_TEST(q.scale_byte == cases::scale_byte_perturbed(t, x, cases::ScaleOp::sqrt_nsq, dir));
      }
    }
}

// Catches names that parse to the wrong change, and unknown names accepted silently.
BOOST_AUTO_TEST_CASE(variant_names) {
  const Variant v = parse_variant("nvcc-fmad+ftz+ulp-:d-inv-div");
  BOOST_TEST(v.ftz);
  BOOST_TEST(v.fuses(Fusion::w_rsq));
  BOOST_TEST((v.perturbed == Step::d_inv_div));
  BOOST_TEST(v.ulps == -1);
  BOOST_TEST(parse_variant("contract").is_contract());
  BOOST_CHECK_THROW(parse_variant("fmad"), std::invalid_argument);
  BOOST_CHECK_THROW(parse_variant("ulp+:d-inv-div+ulp-:d-out-mul"), std::invalid_argument);
  try {
    parse_variant("no-such");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string(e.what()).find("nvcc-fmad") != std::string::npos);
  }
  for (const VariantInfo& i : named_variants()) BOOST_TEST(parse_variant(i.v.name).name == i.v.name);
}

// The proof behind the coverage's exclusion of ulp+-:w-inv-div (cases/observe.cpp): no pair of
// bf16 amax and x changes a code when MAX/amax is one binary32 step off. Catches a format or
// writer change that makes the step observable (it must then be covered, not excluded).
BOOST_AUTO_TEST_CASE(inverse_scale_step_changes_no_code) {
  for (const FormatTraits& t : kFormats)
    BOOST_TEST(cases::inverse_scale_sensitive_groups(t).empty(), t.name);
}

// Catches a midpoint construction that no longer gives midpoints (the rising_scores cases would
// then see l and 1/l only by chance): turbo3v and turbo4v have codes and scales whose dequantised
// value is a bf16 rounding midpoint, turbo2v has none.
BOOST_AUTO_TEST_CASE(midpoint_groups) {
  for (const FormatTraits& t : kFormats) {
    uint16_t x[kGroupSize];
    const bool ok = cases::midpoint_group(t, 0, x);
    BOOST_TEST(ok == (t.bits != 2), t.name);
    if (!ok) continue;
    QuantizedGroup q;
    quantize_groups(t, x, 1, &q);
    for (uint32_t i = 1; i < kGroupSize; ++i)
      BOOST_TEST((f32_bits(dequantize_code(t, q.codes[i], q.scale_byte)) & 0xFFFFu) == 0x8000u);
  }
}

// Catches an l_tie construction (cases/l_tie.h) that no longer decides output bits by one
// rounding of l * eo: in every format and both HDIMs the batch, merge and single cases must see
// the FMA of that product at each site and the product one ulp down, whatever the format's V
// values (turbo2v has no midpoint, so nothing else sees these entries reliably there).
BOOST_AUTO_TEST_CASE(l_tie_cases_see_every_l_product) {
  const int32_t L = int32_t(cases::kLTieLength);
  for (const FormatTraits& t : kFormats)
    for (uint32_t hdim : {128u, 256u})
      for (uint32_t block : {16u, 2u}) {
        cases::CaseSpec c;
        c.kind = golden::CaseKind::decode;
        c.format = t.format;
        c.head_dim = hdim;
        c.block_size = block;
        c.seq_lens = block == 2 ? std::vector<int32_t>{L} : std::vector<int32_t>{L, L, L};
        c.dist = cases::Dist::l_tie;
        const auto cases = cases::build_cases(c, 0, 1, &sm90_profile());
        std::vector<Variant> want;
        for (const char* n : {"fma:batch-l", "fma:merge-l-ab", "fma:merge-l-cd", "ulp-:d-l-mul"})
          if (block == 16) want.push_back(parse_variant(n));
        if (block == 2) want.push_back(parse_variant("fma:single-l"));
        const auto seen = cases::observed_entries(cases.back(), want, &sm90_profile());
        BOOST_TEST(seen.size() == want.size(), t.name << " HDIM " << hdim << " block " << block);
      }
}

// Catches a flags suite in which flush-to-zero and the unsplit EXPF (mutant 14) write the same bits
// everywhere, so that neither the anatomy nor conform's module pin can tell them apart (the H200,
// 2026-12-05): in every format and HDIM the subnormal_rescale case changes under ftz and not
// under expf-no-split.
BOOST_AUTO_TEST_CASE(subnormal_rescale_cases_tell_ftz_from_the_unsplit_expf) {
  for (const FormatTraits& t : kFormats)
    for (uint32_t hdim : {128u, 256u}) {
      cases::CaseSpec c;
      c.kind = golden::CaseKind::decode;
      c.format = t.format;
      c.head_dim = hdim;
      c.num_kv_heads = 2;
      c.q_per_kv = 2;
      c.block_size = 16;
      c.seq_lens = {40, 41, 42, 64};
      c.dist = cases::Dist::subnormal_rescale;
      const auto cases = cases::build_cases(c, 0, 1, &sm90_profile());
      const auto& d = cases.back();
      BOOST_TEST(cases::variant_observed(d, parse_variant("ftz"), &sm90_profile()), t.name << " HDIM " << hdim);
      BOOST_TEST(!cases::variant_observed(d, parse_variant("expf-no-split"), &sm90_profile()),
                 t.name << " HDIM " << hdim);
    }
}
