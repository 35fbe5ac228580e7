// The CPU model as a Backend: copies the case's initial buffers between guard bands and runs
// reshape_and_cache_model / paged_decode_model on the interior, exactly as a GPU launch would.
#include <bit>
#include <cstring>
#include <stdexcept>

#include "judge/backend.h"

#include "tqref/decode.h"
#include "tqref/model_path.h"
#include "tqref/writer.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

// Output rows are bf16 copied as host uint16: the bytes equal the GPU layout only on little-endian.
static_assert(std::endian::native == std::endian::little);

namespace {

class ModelBackend : public Backend {
 public:
  // The backend computes the variant set when it is made (tqref::model_variant(): the contract
  // unless `check --model-variant` chose another); the failure anatomy, which runs later, models
  // the file's expectations instead.
  explicit ModelBackend(const Ex2Profile* ex2) : ex2_(ex2), variant_(model_variant()) {}
  std::string name() const override { return "model"; }

  CaseResult run(const GoldenCase& c) override {
    CaseResult r;
    try {
      if (c.kind == CaseKind::writer) run_writer(c, r);
      else run_decode(c, r);
    } catch (const std::invalid_argument& e) {
      r.buffers.clear();
      r.error = e.what();
    }
    return r;
  }

 private:
  void run_writer(const GoldenCase& c, CaseResult& r) {
    GuardedBuffer k = GuardedBuffer::with_guards(c.w.k_init);
    GuardedBuffer v = GuardedBuffer::with_guards(c.w.v_init);
    reshape_and_cache_model(c.format, c.w.key, c.w.value, {k.data(), k.size()},
                            {v.data(), v.size()}, c.w.slot_mapping, c.w.p, variant_);
    r.buffers["k_cache"] = std::move(k);
    r.buffers["v_cache"] = std::move(v);
  }

  void run_decode(const GoldenCase& c, CaseResult& r) {
    if (!ex2_) throw std::invalid_argument("decode case " + c.name + " needs an EX2 profile");
    const DecodeCase& d = c.d;
    std::vector<uint8_t> out_bytes(d.out_init.size() * 2);
    std::memcpy(out_bytes.data(), d.out_init.data(), out_bytes.size());  // little-endian host
    GuardedBuffer out = GuardedBuffer::with_guards(out_bytes);
    std::vector<uint16_t> o(d.out_init);
    DecodeParams p = d.p;
    p.threshold = c.threshold;
    paged_decode_model(c.format, d.q, d.k_init, d.v_init, o, d.block_tables, d.seq_lens, p, *ex2_,
                       variant_);
    std::memcpy(out.data(), o.data(), out_bytes.size());
    r.buffers["output"] = std::move(out);
  }

  const Ex2Profile* ex2_;
  const Variant variant_;
};

}  // namespace

std::unique_ptr<Backend> make_model_backend(const Ex2Profile* ex2) {
  return std::make_unique<ModelBackend>(ex2);
}

}  // namespace tqref::judge
