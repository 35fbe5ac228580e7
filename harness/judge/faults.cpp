#include "judge/faults.h"

#include <cstring>
#include <unordered_set>

#include "cases/mutant_models.h"
#include "tqref/decode.h"

namespace tqref::golden {

namespace {

constexpr const char* kNames[kNumFaults] = {"none",      "flip-code-bit", "wrong-scale",  "neighbour-slot",
                                            "guard",     "flip-skip",     "unwritten-row", "thresh-ge",
                                            "expf-no-split", "writer-fma"};

int64_t first_written_slot(const WriterCase& w) {
  for (int64_t s : w.slot_mapping)
    if (s >= 0) return s;
  return -1;
}

class FaultBackend : public Backend {
 public:
  FaultBackend(std::unique_ptr<Backend> inner, Fault f, const Ex2Profile* ex2)
      : inner_(std::move(inner)), fault_(f), ex2_(ex2) {}
  std::string name() const override { return inner_->name() + "+" + fault_name(fault_); }

  CaseResult run(const GoldenCase& c) override {
    CaseResult r = inner_->run(c);
    if (!r.error.empty() || !*fault_category(fault_, c.kind)) return r;
    if (fault_ == Fault::guard) {
      GuardedBuffer& b = r.buffers[output_buffers(c.kind)[0]];
      b.bytes[kGuardBytes + b.size()] ^= 0xFF;
    } else if (c.kind == CaseKind::writer) {
      damage_writer(c, r);
    } else {
      damage_decode(c, r);
    }
    return r;
  }

 private:
  void damage_writer(const GoldenCase& c, CaseResult& r) {
    const WriterCase& w = c.w;
    const int64_t s = first_written_slot(w);
    if (s < 0) return;
    const CacheGeometry g{w.p.num_kv_heads, w.p.head_dim, w.p.block_size, w.num_blocks,
                          w.p.v_block_stride_bytes, w.p.v_data_section_bytes};
    GuardedBuffer& k = r.buffers["k_cache"];
    GuardedBuffer& v = r.buffers["v_cache"];
    switch (fault_) {
      case Fault::flip_code_bit: v.data()[g.v_code_row_offset(s, traits(c.format).bits)] ^= 0x01; break;
      case Fault::wrong_scale: {
        uint8_t& sb = v.data()[g.v_scale_row_offset(s)];
        sb = uint8_t(sb == 0x7E ? 0x7D : sb + 1);  // next fp8 code (finite stays finite)
        break;
      }
      case Fault::neighbour_slot: {
        std::unordered_set<int64_t> used(w.slot_mapping.begin(), w.slot_mapping.end());
        const int64_t total = int64_t(w.num_blocks) * w.p.block_size;
        for (int64_t d = 1; d < total; ++d) {  // nearest unwritten slot, after then before
          for (int64_t cand : {s + d, s - d}) {
            if (cand < 0 || cand >= total || used.count(cand)) continue;
            k.data()[g.k_row_offset(cand)] ^= 0x01;
            return;
          }
        }
        break;
      }
      case Fault::unwritten_row:
        std::memcpy(k.data() + g.k_row_offset(s), w.k_init.data() + g.k_row_offset(s), g.k_row_bytes());
        break;
      case Fault::writer_fma: writer_fma_contract_scales(c, {v.data(), v.size()}); break;
      default: break;
    }
  }

  void damage_decode(const GoldenCase& c, CaseResult& r) {
    const DecodeCase& d = c.d;
    GuardedBuffer& out = r.buffers["output"];
    const uint64_t row_bytes = uint64_t(d.p.head_dim) * 2 * d.p.num_q_heads;  // one sequence
    for (uint32_t s = 0; s < d.p.num_seqs; ++s) {
      const bool empty = d.seq_lens[s] <= 0;
      if (fault_ == Fault::neighbour_slot && empty) {
        out.data()[s * row_bytes] ^= 0x01;
        return;
      }
      if (fault_ == Fault::unwritten_row && !empty) {
        std::memcpy(out.data() + s * row_bytes,
                    reinterpret_cast<const uint8_t*>(d.out_init.data()) + s * row_bytes, row_bytes);
        return;
      }
    }
    if ((fault_ == Fault::thresh_ge || fault_ == Fault::expf_no_split) && ex2_) {
      const std::vector<uint16_t> o = fault_ == Fault::thresh_ge ? decode_output_thresh_ge(c, *ex2_)
                                                                 : decode_output_expf_no_split(c, *ex2_);
      std::memcpy(out.data(), o.data(), o.size() * 2);
      return;
    }
    if (fault_ == Fault::flip_skip && ex2_) {
      // A kernel with the skip disabled: every factor exceeds a threshold of -1.
      std::vector<uint16_t> o(d.out_init);
      DecodeParams p = d.p;
      p.threshold = -1.0f;
      paged_decode_model(c.format, d.q, d.k_init, d.v_init, o, d.block_tables, d.seq_lens, p, *ex2_);
      std::memcpy(out.data(), o.data(), o.size() * 2);
    }
  }

  std::unique_ptr<Backend> inner_;
  Fault fault_;
  const Ex2Profile* ex2_;
};

}  // namespace

const char* fault_name(Fault f) { return kNames[int(f)]; }
bool parse_fault(const std::string& s, Fault* f) {
  for (int i = 0; i < kNumFaults; ++i)
    if (s == kNames[i]) {
      *f = Fault(i);
      return true;
    }
  return false;
}

const char* fault_category(Fault f, CaseKind k) {
  const bool w = k == CaseKind::writer;
  switch (f) {
    case Fault::flip_code_bit: return w ? "v-code" : "";
    case Fault::wrong_scale: return w ? "v-scale" : "";
    case Fault::neighbour_slot: return "untouched-modified";
    case Fault::guard: return "guard";
    case Fault::flip_skip: return w ? "" : "skipped-v-read";
    case Fault::unwritten_row: return "row-not-written";
    case Fault::thresh_ge: return w ? "" : "skipped-v-read";
    case Fault::expf_no_split: return w ? "" : "output-value";
    case Fault::writer_fma: return w ? "v-scale" : "";
    default: return "";
  }
}

int fault_mutant(Fault f) {
  switch (f) {
    case Fault::thresh_ge: return 5;
    case Fault::writer_fma: return 13;
    case Fault::expf_no_split: return 14;
    default: return 0;
  }
}

std::string fault_names_list() {
  std::string r;
  for (int i = 0; i < kNumFaults; ++i) r += std::string(i ? ", " : "") + kNames[i];
  return r;
}

std::unique_ptr<Backend> make_fault_backend(std::unique_ptr<Backend> inner, Fault f,
                                            const Ex2Profile* ex2) {
  if (f == Fault::none) return inner;
  return std::make_unique<FaultBackend>(std::move(inner), f, ex2);
}

}  // namespace tqref::golden
