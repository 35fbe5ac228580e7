// Study 3 on synthetic data: Gaussian q, K and V with two score spreads.
#include <cmath>
#include <string>

#include "analysis/study/decode_study.h"
#include "analysis/study/rng.h"
#include "tqref/numeric.h"

namespace tqref::study {

namespace {

// q entries have standard deviation `score_std`, K entries 1, so with 1/sqrt(D) the scores have
// standard deviation score_std: 1 gives a flat softmax (little to skip), 3 a peaked one.
DecodeBatch make_batch(const std::string& name, double score_std, const std::vector<uint32_t>& ctx,
                       uint32_t reps, uint64_t seed, uint64_t stream) {
  DecodeBatch b;
  b.source = name;
  b.kv_heads = 2;
  b.q_heads = 4;
  b.head_dim = 128;
  b.inv_sqrt_d = 1.0f / std::sqrt(128.0f);
  const uint32_t n = b.kv_heads * b.head_dim;
  uint64_t item = 0;
  for (uint32_t L : ctx)
    for (uint32_t r = 0; r < reps; ++r, ++item) {
      Rng g(seed, stream * 1000003ull + item);
      b.lens.push_back(L);
      std::vector<uint16_t> k(uint64_t(L) * n), v(uint64_t(L) * n), q(b.q_heads * b.head_dim);
      for (auto& x : k) x = f32_to_bf16(float(g.normal()));
      for (auto& x : v) x = f32_to_bf16(float(g.normal()));
      for (auto& x : q) x = f32_to_bf16(float(g.normal() * score_std));
      b.k.push_back(std::move(k));
      b.v.push_back(std::move(v));
      b.q.push_back(std::move(q));
    }
  return b;
}

}  // namespace

void run_decode_synthetic(const StudyOptions& o, const Ex2Profile& ex2, std::vector<Table>& out) {
  Table t{"decode_error", decode_columns(), {}};
  std::vector<uint32_t> ctx = o.quick ? std::vector<uint32_t>{64, 257}
                                      : std::vector<uint32_t>{64, 128, 256, 512, 1024, 2048, 4096, 8192};
  const uint32_t reps = o.quick ? 1 : 4;
  run_decode_batch(o, make_batch("gaussian_score_std1", 1.0, ctx, reps, o.seed, 101), ex2, kThresholds, t);
  run_decode_batch(o, make_batch("gaussian_score_std3", 3.0, ctx, reps, o.seed, 102), ex2, kThresholds, t);
  out.push_back(std::move(t));
}

}  // namespace tqref::study
