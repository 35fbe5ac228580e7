#include "judge/ex2_expectation.h"

#include "tqref/decode.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

std::string align_decode_expectation(GoldenCase& c, const Ex2Source& src) {
  if (c.kind != CaseKind::decode || src.same_as_file) return "";
  if (!src.profile) return src.why;
  DecodeCase& d = c.d;
  DecodeParams p = d.p;
  p.threshold = c.threshold;
  std::vector<uint16_t> out(d.out_init);
  DecodeDiagnostics diag;
  paged_decode_model(c.format, d.q, d.k_init, d.v_init, out, d.block_tables, d.seq_lens, p,
                     *src.profile, &diag);
  d.out_expected = std::move(out);
  // skip counts decide the "skipped-v-read" category in compare_case
  d.diag.skip_count.assign(diag.heads.size(), 0);
  for (size_t r = 0; r < diag.heads.size(); ++r) d.diag.skip_count[r] = diag.heads[r].skip_count;
  return "";
}

}  // namespace tqref::judge
