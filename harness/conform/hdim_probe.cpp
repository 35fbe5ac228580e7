#include "conform/hdim_probe.h"

#include "cases/builders.h"
#include "cases/case_spec.h"

namespace tqref::conform {

golden::GoldenCase hdim_probe_case(Format f, uint32_t hdim, float threshold, const Ex2Profile& ex2) {
  golden::CaseSpec s;
  s.kind = golden::CaseKind::decode;
  s.format = f;
  s.head_dim = hdim;
  // Two kv heads with GQA 2: the row after (seq, qhead) of an HDIM=256 build run at head_dim 128
  // is a q head of the same kv head, so the dims it spills there differ from that row's own.
  s.num_kv_heads = 2;
  s.q_per_kv = 2;
  s.block_size = 16;
  s.seq_lens = {1, 1, 1};
  s.dist = golden::Dist::gaussian;
  s.threshold = threshold;
  std::vector<golden::GoldenCase> pair = build_cases(s, 0, 0x5EED0F11DA7Aull + hdim, &ex2);
  golden::GoldenCase c = std::move(pair.back());  // {linked writer, decode}
  c.name = "hdim_probe_" + std::string(traits(f).name) + "_hdim" + std::to_string(hdim);
  return c;
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

}  // namespace

HdimChoice choose_hdim(const ProbeAtHdim& a, const ProbeAtHdim& b) {
  const std::string seen = "probe at HDIM 128: " + outcome(a) + "; at HDIM 256: " + outcome(b);
  HdimChoice c;
  if (all_exact(a) != all_exact(b)) {
    c.hdim = all_exact(a) ? 128 : 256;
    c.exact = true;
    c.why = "HDIM " + std::to_string(c.hdim) + " chosen by probe (" + seen + ")";
    return c;
  }
  if (all_exact(a)) {
    c.why = "both probes exact, so the probe cannot tell the HDIM; judged at level T with 128 (" + seen +
            "); pass --hdim MODULE=128|256";
    return c;
  }
  // Neither exact: keep the closer one (fewer differing bytes, no launch error; ties: 128).
  const bool pick256 = (a.error.empty() ? 0 : 1) > (b.error.empty() ? 0 : 1) ||
                       (a.error.empty() == b.error.empty() && b.bytes_differing < a.bytes_differing);
  c.hdim = pick256 ? 256 : 128;
  c.why = "neither probe exact (" + seen + "): decoders judged at level T with HDIM " +
          std::to_string(c.hdim) + " (fewer differing bytes); pass --hdim MODULE=128|256 to state it";
  return c;
}

}  // namespace tqref::conform
