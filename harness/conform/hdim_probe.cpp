#include "conform/hdim_probe.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "cases/builders.h"
#include "cases/case_spec.h"
#include "tqref/contract.h"

namespace tqref::conform {

golden::GoldenCase hdim_probe_case(Format f, uint32_t hdim, float threshold, const Ex2Profile& ex2) {
  cases::CaseSpec s;
  s.kind = golden::CaseKind::decode;
  s.format = f;
  s.head_dim = hdim;
  // One q head per sequence: row r is sequence r. Each active row is followed by two rows that
  // must stay untouched: the first catches the 128 elements an HDIM=256 build writes past a
  // head_dim=128 row, the second tells that spill from a kernel that writes L == 0 rows.
  s.num_kv_heads = 1;
  s.q_per_kv = 1;
  s.block_size = 16;
  s.seq_lens = {1, 0, 0, 1, 0, 0, 1, 0, 0};
  s.dist = cases::Dist::gaussian;
  s.threshold = threshold;
  std::vector<golden::GoldenCase> pair = build_cases(s, 0, 0x5EED0F11DA7Aull + hdim, &ex2);
  golden::GoldenCase c = std::move(pair.back());  // {linked writer, decode}
  c.name = "hdim_probe_" + std::string(traits(f).name) + "_hdim" + std::to_string(hdim);
  return c;
}

ProbeWrites observe_probe_writes(const golden::GoldenCase& c, const judge::CaseResult& r) {
  ProbeWrites w;
  w.head_dim = c.d.p.head_dim;
  w.error = r.error;
  auto it = r.buffers.find("output");
  if (!w.error.empty() || it == r.buffers.end()) {
    if (w.error.empty()) w.error = "no output buffer";
    return w;
  }
  const judge::GuardedBuffer& out = it->second;
  const uint32_t D = w.head_dim, S = c.d.p.num_seqs;
  auto element = [&](uint64_t row, uint32_t k) {
    uint16_t got;
    std::memcpy(&got, out.data() + 2 * (row * D + k), 2);
    return got;
  };
  auto changed = [&](uint64_t row, uint32_t k) { return element(row, k) != c.d.out_init[row * D + k]; };
  for (uint32_t s = 0; s < S; ++s) {
    if (c.d.seq_lens[s] <= 0) continue;
    ++w.active_rows;
    for (uint32_t k = 0; k < D; ++k) {
      if (changed(s, k)) {
        ++w.in_rows;
        w.dims_written = std::max(w.dims_written, k + 1);
        w.nan_in_rows += element(s, k) == kNoComputeOutput;
      }
      if (s + 1 < S && changed(s + 1, k)) ++w.next_rows, w.next_extent = std::max(w.next_extent, k + 1);
      if (s + 2 < S && changed(s + 2, k)) ++w.far;
    }
  }
  for (uint64_t i = 0; i < judge::kGuardBytes; ++i)
    w.guard_after += out.bytes[judge::kGuardBytes + out.size() + i] != judge::guard_byte(i);
  return w;
}

WriteEvidence hdim_from_writes(const ProbeWrites& w) {
  const std::string at = "at head_dim " + std::to_string(w.head_dim) + ": ";
  const std::string rows = std::to_string(w.active_rows) + " CTAs";
  if (!w.error.empty()) return {0, at + "launch failed"};
  if (w.in_rows == 0 && w.next_rows == 0 && w.guard_after == 0) return {0, at + "nothing written"};
  if (w.far > 0)
    return {0, at + std::to_string(w.far) + " elements of a second L == 0 row after an active row changed "
                    "(no HDIM explains that)"};
  if (w.guard_after > 0) return {0, at + std::to_string(w.guard_after) + " guard bytes after the output changed"};
  if (w.head_dim == 128) {
    if (w.next_rows == 0)
      return {128,
              at + rows + " wrote " + std::to_string(w.in_rows) +
                  " elements, none outside their 128-element rows (an HDIM=128 build, or an HDIM=256 build "
                  "following section 5.1)",
              true};
    return {256, at + rows + " wrote " + std::to_string(w.next_rows) + " elements past their 128-element rows (into the "
                      "next, L == 0, row; up to element " + std::to_string(128 + w.next_extent - 1) + " of a CTA)"};
  }
  if (w.head_dim == 256) {
    if (w.next_rows > 0)
      return {0, at + std::to_string(w.next_rows) + " elements past the 256-element rows changed (no HDIM explains that)"};
    if (w.in_rows == uint64_t(w.active_rows) * 256 && w.nan_in_rows == w.in_rows)
      return {128, at + rows + " wrote bf16 NaN over every element of their 256-element rows: an HDIM=128 build "
                        "refusing head_dim 256 (docs/spec.md section 5.1)"};
    if (w.dims_written > 128)
      return {256, at + rows + " wrote dims up to " + std::to_string(w.dims_written - 1) + " of their 256-element rows"};
    return {128, at + rows + " wrote " + std::to_string(w.in_rows) + " elements, dims 128-255 of every row untouched"};
  }
  return {0, at + "not a probe head_dim"};
}

namespace {

std::string outcome(const ProbeAtHdim& p) {
  if (p.kernels == 0) return "not run";
  if (!p.error.empty()) return "launch error (" + p.error + ")";
  if (p.exact == p.kernels) return "exact";
  return std::to_string(p.kernels - p.exact) + " of " + std::to_string(p.kernels) + " decoders differ (" +
         std::to_string(p.bytes_differing) + " bytes)";
}

bool all_exact(const ProbeAtHdim& p) { return p.kernels > 0 && p.error.empty() && p.exact == p.kernels; }

// The HDIM every strong write evidence agrees on; without strong evidence, the one the weak
// evidence agrees on (0: none decided, or they disagree), and the sentences of the first
// decoder's launches.
uint32_t from_writes(const ProbeAtHdim& a, const ProbeAtHdim& b, std::string* text) {
  std::set<uint32_t> strong, weak;
  for (const ProbeAtHdim* p : {&a, &b})
    for (const WriteEvidence& e : p->writes)
      if (e.hdim) (e.weak ? weak : strong).insert(e.hdim);
  std::string t;
  for (const ProbeAtHdim* p : {&a, &b})
    if (!p->writes.empty()) t += (t.empty() ? "" : "; ") + p->writes.front().why;
  *text = t;
  const std::set<uint32_t>& said = strong.empty() ? weak : strong;
  return said.size() == 1 ? *said.begin() : 0;
}

}  // namespace

HdimChoice choose_hdim(const ProbeAtHdim& a, const ProbeAtHdim& b) {
  const std::string values = "values at head_dim 128: " + outcome(a) + "; at head_dim 256: " + outcome(b);
  std::string writes;
  const uint32_t w = from_writes(a, b, &writes);
  HdimChoice c;
  if (w) {
    c.hdim = w;
    c.decided = true;
    c.evidence = "writes";
    c.why = "HDIM " + std::to_string(w) + " decided by what the decoders write (" + writes + "); " + values +
            "; the values are judged at HDIM " + std::to_string(w);
    return c;
  }
  const std::string why_not = writes.empty() ? "" : "the writes decide nothing (" + writes + "); ";
  if (all_exact(a) != all_exact(b)) {
    c.hdim = all_exact(a) ? 128 : 256;
    c.decided = true;
    c.evidence = "values";
    c.why = "HDIM " + std::to_string(c.hdim) + " decided by the values: " + why_not + values;
    return c;
  }
  c.evidence = "none";
  if (all_exact(a)) {
    c.why = why_not + "both probes exact, so the probe cannot tell the HDIM; judged at level T with 128 (" + values +
            "); pass --hdim MODULE=128|256";
    return c;
  }
  // Neither exact and the writes undecided: keep the closer one (fewer differing bytes, no launch
  // error; ties: 128), judged at level T only.
  const bool pick256 = (a.error.empty() ? 0 : 1) > (b.error.empty() ? 0 : 1) ||
                       (a.error.empty() == b.error.empty() && b.bytes_differing < a.bytes_differing);
  c.hdim = pick256 ? 256 : 128;
  c.why = why_not + "neither probe exact (" + values + "): decoders judged at level T with HDIM " +
          std::to_string(c.hdim) + " (fewer differing bytes); pass --hdim MODULE=128|256 to state it";
  return c;
}

}  // namespace tqref::conform
