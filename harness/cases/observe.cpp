#include "cases/observe.h"

#include <cstring>
#include <stdexcept>

#include "io/approx_units_io.h"
#include "tqref/decode.h"
#include "tqref/writer.h"

namespace tqref::cases {

using namespace golden;  // the golden case and file format (harness/io)

namespace {

bool kernel_has_step(CaseKind kind, Step s) { return step_is_writer(s) == (kind == CaseKind::writer); }

bool variant_changes(CaseKind kind, const Variant& v) {
  return kind == CaseKind::writer ? changes_writer(v) : changes_decoder(v);
}

// Entries that provably change no byte, with why (docs/variants.md, "Blind by proof"), and
// variants whose model reads measured tables this machine does not have; null for the others.
const char* excluded_why(const Variant& v) {
  if (needs_approx_units(v) && !approx_units_present())
    return "not counted here: its model needs the measured tables data/hw/sm_90/approx.h5, "
           "which are missing (docs/approx-units.md)";
  const std::string& name = v.name;
  if (name == "ulp+:w-fallback-div" || name == "ulp-:w-fallback-div")
    return "its branch is never taken: rn >= 4 * min|CB| > 1e-10 for every format";
  if (name == "ulp+:w-inv-div" || name == "ulp-:w-inv-div")
    return "no bf16 (amax, x) changes a code when MAX/amax is one step off: exhausted by "
           "inverse_scale_sensitive_groups (cases/step_groups.h, tests/test_variants.cpp)";
  if (name == "fma:nsq")
    return "x*x of a bf16 x is exact unless it is below 2^-126, and then nsq is below 2^-102 and "
           "the scale byte is 0 with or without the fused rounding";
  return nullptr;
}

// Every entry of a kernel kind, excluded or not: each step one step off either way, then every
// named variant that changes the kernel (the contract left out).
std::vector<Variant> all_entries(CaseKind kind) {
  std::vector<Variant> v;
  for (int s = 0; s < kNumSteps; ++s) {
    if (!kernel_has_step(kind, Step(s))) continue;
    for (const char* sign : {"ulp+:", "ulp-:"})
      v.push_back(parse_variant(std::string(sign) + step_name(Step(s))));
  }
  for (const VariantInfo& i : named_variants())
    if (!i.v.is_contract() && variant_changes(kind, i.v)) v.push_back(i.v);
  if (approx_units_present()) approx_units();  // loaded (or refused) before any parallel work
  return v;
}

}  // namespace

std::vector<Variant> coverage_entries(CaseKind kind) {
  std::vector<Variant> v;
  for (Variant& e : all_entries(kind))
    if (!excluded_why(e)) v.push_back(std::move(e));
  return v;
}

std::vector<ExcludedEntry> excluded_entries(CaseKind kind) {
  std::vector<ExcludedEntry> x;
  for (const Variant& e : all_entries(kind))
    if (const char* why = excluded_why(e)) x.push_back({e.name, why});
  return x;
}

std::vector<uint8_t> run_variant(const GoldenCase& c, const Variant& v, const Ex2Profile* ex2) {
  if (c.kind == CaseKind::writer) {
    const WriterCase& w = c.w;
    std::vector<uint8_t> k(w.k_init), val(w.v_init);
    reshape_and_cache_model(c.format, w.key, w.value, k, val, w.slot_mapping, w.p, v);
    k.insert(k.end(), val.begin(), val.end());
    return k;
  }
  if (!ex2) throw std::invalid_argument("run_variant: decode case '" + c.name + "' needs an EX2 profile");
  const DecodeCase& d = c.d;
  std::vector<uint16_t> out(d.out_init);
  paged_decode_model(c.format, d.q, d.k_init, d.v_init, out, d.block_tables, d.seq_lens, d.p, *ex2, v);
  std::vector<uint8_t> bytes(out.size() * 2);
  std::memcpy(bytes.data(), out.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> expected_bytes(const GoldenCase& c) {
  if (c.kind == CaseKind::writer) {
    std::vector<uint8_t> b(c.w.k_expected);
    b.insert(b.end(), c.w.v_expected.begin(), c.w.v_expected.end());
    return b;
  }
  std::vector<uint8_t> b(c.d.out_expected.size() * 2);
  std::memcpy(b.data(), c.d.out_expected.data(), b.size());
  return b;
}

bool variant_observed(const GoldenCase& c, const Variant& v, const Ex2Profile* ex2) {
  return run_variant(c, v, ex2) != expected_bytes(c);
}

std::vector<std::string> rival_pairs(const std::vector<Variant>& rivals) {
  std::vector<std::string> pairs;
  for (size_t i = 0; i < rivals.size(); ++i)
    for (size_t j = i + 1; j < rivals.size(); ++j) pairs.push_back(rivals[i].name + "|" + rivals[j].name);
  return pairs;
}

std::vector<std::string> told_apart_pairs(const GoldenCase& c, const std::vector<Variant>& rivals,
                                          const Ex2Profile* ex2) {
  std::vector<std::vector<uint8_t>> bytes;
  for (const Variant& v : rivals) bytes.push_back(run_variant(c, v, ex2));
  std::vector<std::string> apart;
  for (size_t i = 0; i < rivals.size(); ++i)
    for (size_t j = i + 1; j < rivals.size(); ++j)
      if (bytes[i] != bytes[j]) apart.push_back(rivals[i].name + "|" + rivals[j].name);
  return apart;
}

std::vector<std::string> observed_entries(const GoldenCase& c, const std::vector<Variant>& entries,
                                          const Ex2Profile* ex2) {
  const std::vector<uint8_t> expected = expected_bytes(c);
  std::vector<std::string> seen;
  for (const Variant& v : entries)
    if (run_variant(c, v, ex2) != expected) seen.push_back(v.name);
  return seen;
}

}  // namespace tqref::cases
