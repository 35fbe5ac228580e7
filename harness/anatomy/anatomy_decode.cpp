// Decoder half of the failure anatomy: rows, dims (lanes, VEC slots), lengths, skip states and
// block positions of the wrong output elements, and how they are wrong.
#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <optional>

#include "anatomy/anatomy_parts.h"
#include "tqref/decode.h"

namespace tqref::anatomy {

using namespace golden;  // the cases the anatomy reads (harness/io)
using namespace judge;   // their results and verdicts (harness/judge)

namespace {

// One output row (sequence s, q head qh) of a sequence with L > 0.
struct RowFact {
  uint32_t s = 0, qh = 0, kvh = 0;
  int32_t L = 0;
  bool window = false;       // the sliding window cuts the sequence (start > 0)
  int skipped = -1;          // positions skipped by the model: 1 some, 0 none, -1 unknown
  bool batch = false;        // some warp forms a batch of 4 (docs/spec.md section 5 partition)
  bool multi_block = false;  // positions start .. L-1 span more than one cache block
  bool last_odd = false;     // the physical block of position L-1 has an odd id
  bool wrong = false;
};

bool forms_batch(uint64_t start, uint64_t L, uint64_t B) {
  const uint64_t chunk = (L - start + kDecodeWarps - 1) / kDecodeWarps;
  for (uint64_t lo = start; lo < L; lo += chunk) {
    const uint64_t hi = std::min(lo + chunk, L);
    for (uint64_t p = lo; p < hi;) {
      const uint64_t end = std::min((p / B + 1) * B, hi);
      if (end - p >= 4) return true;
      p = end;
    }
  }
  return false;
}

// Skip counts per row: from the file's diagnostics, else from a model run, else unknown.
std::vector<int> skip_states(const GoldenCase& c, const ExplainOptions& o) {
  const DecodeCase& d = c.d;
  const size_t rows = size_t(d.p.num_seqs) * d.p.num_q_heads;
  std::vector<int> out(rows, -1);
  if (d.diag.skip_count.size() == rows) {
    for (size_t r = 0; r < rows; ++r) out[r] = d.diag.skip_count[r] > 0;
    return out;
  }
  if (!o.ex2) return out;
  DecodeDiagnostics diag;
  std::vector<uint16_t> tmp(d.out_init);
  DecodeParams p = d.p;
  p.threshold = c.threshold;
  try {
    paged_decode_model(c.format, d.q, d.k_init, d.v_init, tmp, d.block_tables, d.seq_lens, p, *o.ex2, &diag);
  } catch (const std::invalid_argument&) {
    return out;
  }
  for (size_t r = 0; r < rows; ++r) out[r] = diag.heads[r].skip_count > 0;
  return out;
}

// A predicate on rows that is true exactly for the wrong ones, as a phrase and its complement.
struct RowRule {
  std::string wrong, exact, suspect;
};

std::optional<RowRule> separate(const std::vector<RowFact>& rows) {
  auto exactly = [&](const std::function<bool(const RowFact&)>& f) {
    for (const RowFact& r : rows)
      if (f(r) != r.wrong) return false;
    return true;
  };
  auto both = [&](const std::function<bool(const RowFact&)>& f) {
    bool t = false, u = false;
    for (const RowFact& r : rows) (f(r) ? t : u) = true;
    return t && u;
  };
  struct Candidate {
    std::function<bool(const RowFact&)> f;
    const char *wrong, *exact, *suspect;
  };
  const std::vector<Candidate> cands = {
      {[](const RowFact& r) { return r.skipped == 1; }, "the rows with skipped positions",
       "the rows without", "the sparse-V skip (its threshold or its comparison)"},
      {[](const RowFact& r) { return r.skipped == 0; }, "the rows without skipped positions",
       "the rows with skipped positions", "the V accumulation of positions that are not skipped"},
      {[](const RowFact& r) { return r.window; }, "the rows whose sliding window cuts the sequence (L > W)",
       "the others", "the sliding window start"},
      {[](const RowFact& r) { return r.batch; }, "the rows where a warp forms a batch of 4",
       "the rows of singles only", "the batch-of-4 step (docs/spec.md section 5)"},
      {[](const RowFact& r) { return r.multi_block; }, "the rows spanning more than one cache block",
       "single-block rows", "the walk across cache blocks (block table lookup, block stride)"},
      {[](const RowFact& r) { return r.last_odd; }, "the rows whose last position lies in an odd physical block",
       "the rows ending in an even block", "the physical block id entering the arithmetic"},
      {[](const RowFact& r) { return !r.last_odd; }, "the rows whose last position lies in an even physical block",
       "the rows ending in an odd block", "the physical block id entering the arithmetic"},
  };
  for (const Candidate& k : cands)
    if (both(k.f) && exactly(k.f)) return RowRule{k.wrong, k.exact, k.suspect};
  // A length threshold: wrong exactly for L >= k, or exactly for L <= k.
  int32_t lo_wrong = INT32_MAX, hi_wrong = 0;
  for (const RowFact& r : rows)
    if (r.wrong) lo_wrong = std::min(lo_wrong, r.L), hi_wrong = std::max(hi_wrong, r.L);
  if (both([&](const RowFact& r) { return r.L >= lo_wrong; }) && exactly([&](const RowFact& r) { return r.L >= lo_wrong; }))
    return RowRule{"the rows with L >= " + std::to_string(lo_wrong), "shorter rows",
                   lo_wrong <= 2 ? "the merge of warp states (a sequence spread over several warps)"
                                 : "the per-warp walk (batches of 4, singles, the partition)"};
  if (both([&](const RowFact& r) { return r.L <= hi_wrong; }) && exactly([&](const RowFact& r) { return r.L <= hi_wrong; }))
    return RowRule{"the rows with L <= " + std::to_string(hi_wrong), "longer rows", "short sequences (partition edge cases)"};
  // Head sets that repeat in every sequence.
  for (const bool by_kv : {true, false}) {
    std::vector<uint32_t> heads;
    for (const RowFact& r : rows)
      if (r.wrong) heads.push_back(by_kv ? r.kvh : r.qh);
    std::sort(heads.begin(), heads.end());
    heads.erase(std::unique(heads.begin(), heads.end()), heads.end());
    auto in = [&](const RowFact& r) { return std::binary_search(heads.begin(), heads.end(), by_kv ? r.kvh : r.qh); };
    if (both(in) && exactly(in))
      return RowRule{std::string(by_kv ? "the q heads of kv heads " : "q heads ") + ranges_text(heads) + " (every sequence)",
                     "the other heads", by_kv ? "the kv head mapping or the per-head pool offset" : "the q head index"};
  }
  return std::nullopt;
}

std::string dims_phrase(const std::vector<uint32_t>& dims, uint32_t D, uint32_t vec, std::string* exact,
                        std::string* suspect) {
  if (dims.size() == D) return "all dims";
  std::vector<uint32_t> lanes, slots;
  for (uint32_t d : dims) lanes.push_back(d / vec), slots.push_back(d % vec);
  std::sort(lanes.begin(), lanes.end());
  lanes.erase(std::unique(lanes.begin(), lanes.end()), lanes.end());
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  std::vector<uint32_t> rest;
  for (uint32_t d = 0, i = 0; d < D; ++d)
    if (i < dims.size() && dims[i] == d) ++i;
    else rest.push_back(d);
  *exact = "dims " + ranges_text(rest) + " exact";
  if (dims.size() == lanes.size() * vec) {
    *suspect = "per-lane addressing of q, K or V (lanes " + ranges_text(lanes) + ")";
    return "dims " + ranges_text(dims) + " (lanes " + ranges_text(lanes) + ", all VEC slots)";
  }
  if (dims.size() == slots.size() * (D / vec)) {
    *suspect = "the order of a lane's " + std::to_string(vec) + " elements (vector loads or unpacking)";
    return "dims " + ranges_text(dims) + " (VEC slot " + ranges_text(slots) + " of every lane, VEC = " +
           std::to_string(vec) + ")";
  }
  *suspect = "group-level V addressing (codes or scale of another group)";
  return "dims " + ranges_text(dims) + " (lanes " + ranges_text(lanes) + ", VEC slots " + ranges_text(slots) + ")";
}

// Element-level facts over the wrong elements of rows with L > 0.
struct ElemFacts {
  uint64_t wrong = 0, nan = 0, unwritten = 0, single_bit = 0, lowest_bit = 0;
  uint32_t max_ulp = 0;
};

std::string magnitude_phrase(const ElemFacts& e, std::string* pattern) {
  if (e.unwritten == e.wrong) return "left at their initial poison";
  if (e.nan) return std::to_string(e.nan) + " of them NaN where the expectation is finite";
  if (e.lowest_bit == e.wrong) {
    *pattern = "lowest-bit";
    return "only the lowest bit differs";
  }
  if (e.single_bit == e.wrong) {
    *pattern = "single-bit";
    return "each one bit off";
  }
  return e.max_ulp == 1 ? "each 1 ulp off" : "up to " + std::to_string(e.max_ulp) + " ulp off";
}

}  // namespace

AnatomyFacts decode_anatomy(const GoldenCase& c, const CaseResult& r, const ExplainOptions& o) {
  const DecodeCase& d = c.d;
  const uint32_t D = d.p.head_dim, QH = d.p.num_q_heads, vec = d.p.hdim / kWarpSize;
  const uint32_t ratio = QH / d.p.num_kv_heads;
  const GuardedBuffer& out = r.buffers.at("output");
  const std::vector<int> skips = skip_states(c, o);
  std::vector<RowFact> rows;
  std::vector<uint8_t> dim_wrong(D, 0);
  ElemFacts e;
  uint64_t l0_written = 0;
  std::vector<uint32_t> lengths_wrong, lengths_exact;
  for (uint32_t s = 0; s < d.p.num_seqs; ++s)
    for (uint32_t qh = 0; qh < QH; ++qh) {
      const uint64_t base = (uint64_t(s) * QH + qh) * D;
      const int32_t L = d.seq_lens[s];
      RowFact f;
      bool any = false;
      for (uint32_t k = 0; k < D; ++k) {
        uint16_t got;
        std::memcpy(&got, out.data() + 2 * (base + k), 2);
        const uint16_t want = d.out_expected[base + k];
        if (got == want) continue;
        any = true;
        if (L <= 0) continue;
        ++e.wrong;
        dim_wrong[k] = 1;
        const uint16_t x = got ^ want;
        e.nan += bf16_is_nan(got) && !bf16_is_nan(want);
        e.unwritten += got == d.out_init[base + k];
        e.single_bit += std::popcount(x) == 1;
        e.lowest_bit += x == 1;
        if (bf16_is_nan(got) == bf16_is_nan(want)) e.max_ulp = std::max(e.max_ulp, bf16_ulp_distance(got, want));
      }
      if (L <= 0) {
        l0_written += any;
        continue;
      }
      const uint32_t w = d.p.sliding_window;
      const uint64_t start = (w > 0 && uint32_t(L) > w) ? uint64_t(L) - w : 0;
      f.s = s, f.qh = qh, f.kvh = qh / ratio, f.L = L, f.window = start > 0, f.wrong = any;
      f.skipped = skips[size_t(s) * QH + qh];
      f.batch = forms_batch(start, uint64_t(L), d.p.block_size);
      f.multi_block = start / d.p.block_size != uint64_t(L - 1) / d.p.block_size;
      f.last_odd = d.block_tables[uint64_t(s) * d.p.max_blocks_per_seq + uint64_t(L - 1) / d.p.block_size] & 1;
      rows.push_back(f);
      (any ? lengths_wrong : lengths_exact).push_back(uint32_t(L));
    }
  AnatomyFacts a;
  a.values_wrong = e.wrong > 0;
  uint64_t rows_wrong = 0;
  for (const RowFact& f : rows) rows_wrong += f.wrong;
  std::string l0 = l0_written ? std::to_string(l0_written) + " rows of L == 0 sequences written" : "L == 0 rows untouched";
  if (!a.values_wrong) {
    a.what = "every output element of the " + std::to_string(rows.size()) + " rows with L > 0 exact; " + l0;
    a.suspect = l0_written ? "a CTA that does not return for L == 0" : "writes outside the output rows";
  } else {
    std::vector<uint32_t> dims;
    for (uint32_t k = 0; k < D; ++k)
      if (dim_wrong[k]) dims.push_back(k);
    std::string dims_exact, dims_suspect;
    const std::string dp = dims_phrase(dims, D, vec, &dims_exact, &dims_suspect);
    const std::optional<RowRule> rule = rows_wrong == rows.size() ? std::nullopt : separate(rows);
    const std::string rows_p = rows_wrong == rows.size() ? "every row with L > 0"
                               : rule                    ? rule->wrong
                                                         : std::to_string(rows_wrong) + " rows";
    std::string pattern;
    const std::string mag = magnitude_phrase(e, &pattern);
    std::vector<std::string> exact;
    if (!dims_exact.empty()) exact.push_back(dims_exact);
    if (rule) exact.push_back(rule->exact + " exact");
    exact.push_back(l0);
    a.what = dp + " wrong in " + rows_p + " (" + std::to_string(rows_wrong) + " of " + std::to_string(rows.size()) +
             " rows with L > 0), " + mag + "; " + join_and(exact);
    a.pattern = pattern;
    if (e.unwritten == e.wrong) a.suspect = "rows left unwritten (a CTA that returns early or stores elsewhere)";
    else if (e.nan) a.suspect = "V read at positions the skip rule excludes (those V groups are poisoned)";
    else if (!dims_suspect.empty()) a.suspect = dims_suspect;
    else if (rule) a.suspect = rule->suspect;
    else if (e.max_ulp <= 1) a.suspect = "a rounding difference: fused multiply-add, the order of a sum, or another EX2 unit";
    else a.suspect = "the arithmetic of docs/spec.md section 5";
  }
  std::sort(lengths_wrong.begin(), lengths_wrong.end());
  lengths_wrong.erase(std::unique(lengths_wrong.begin(), lengths_wrong.end()), lengths_wrong.end());
  std::sort(lengths_exact.begin(), lengths_exact.end());
  lengths_exact.erase(std::unique(lengths_exact.begin(), lengths_exact.end()), lengths_exact.end());
  std::vector<uint32_t> dims, lanes;
  for (uint32_t k = 0; k < D; ++k)
    if (dim_wrong[k]) dims.push_back(k), lanes.push_back(k / vec);
  lanes.erase(std::unique(lanes.begin(), lanes.end()), lanes.end());
  a.json = {{"rows", rows.size()},
            {"rows_wrong", rows_wrong},
            {"l0_rows_written", l0_written},
            {"elements_wrong", e.wrong},
            {"vec", vec},
            {"dims_wrong", ranges_text(dims, 64)},
            {"lanes_wrong", ranges_text(lanes, 64)},
            {"lengths_wrong", ranges_text(lengths_wrong, 64)},
            {"lengths_exact", ranges_text(lengths_exact, 64)},
            {"nan", e.nan},
            {"unwritten", e.unwritten},
            {"single_bit", e.single_bit},
            {"max_ulp", e.max_ulp}};
  return a;
}

}  // namespace tqref::anatomy
