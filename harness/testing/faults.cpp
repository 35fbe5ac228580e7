#include "testing/faults.h"

#include <cstring>
#include <map>
#include <unordered_set>

#include "cases/mutant_models.h"
#include "judge/launch_buffers.h"
#include "tqref/decode.h"
#include "tqref/writer.h"

namespace tqref::testing {

using namespace golden;  // the cases the faults run (harness/io)
using namespace cases;   // the CPU models of the mutants they inject (harness/cases)
using namespace judge;   // the backend and results they wrap (harness/judge)

namespace {

constexpr const char* kNames[kNumFaults] = {"none",      "flip-code-bit", "wrong-scale",  "neighbour-slot",
                                            "guard",     "flip-skip",     "unwritten-row", "thresh-ge",
                                            "expf-no-split", "writer-fma", "dense-large-batch",
                                            "block-parity-lsb", "writer-contiguous", "repeat-lsb"};

// Mutant 18 takes its dense path for launches of more than this many sequences (gridDim.y): more
// than any committed suite holds (18 at most, the real suite), fewer than level I's large batch
// (33 or more, LevelIOptions::large_batch).
constexpr uint32_t kDenseBatchSeqs = 32;

// The decode model on c with another THRESH (-1: every factor exceeds it, nothing is skipped).
std::vector<uint16_t> decode_with_threshold(const GoldenCase& c, float threshold, const Ex2Profile& ex2) {
  const DecodeCase& d = c.d;
  std::vector<uint16_t> o(d.out_init);
  DecodeParams p = d.p;
  p.threshold = threshold;
  paged_decode_model(c.format, d.q, d.k_init, d.v_init, o, d.block_tables, d.seq_lens, p, ex2);
  return o;
}

// Flips the lowest bit of every output element of the sequences `flip` selects (L > 0 only).
template <class F>
void flip_lowest_bits(const GoldenCase& c, GuardedBuffer& out, F flip) {
  const DecodeCase& d = c.d;
  const uint64_t row = uint64_t(d.p.head_dim) * d.p.num_q_heads;  // one sequence, bf16 elements
  for (uint32_t s = 0; s < d.p.num_seqs; ++s)
    if (d.seq_lens[s] > 0 && flip(s))
      for (uint64_t e = 0; e < row; ++e) out.data()[2 * (s * row + e)] ^= 0x01;  // little-endian
}

// FNV-1a 64 over every buffer of the launch and its scalar parameters: equal for a repeat.
uint64_t launch_hash(const GoldenCase& c) {
  uint64_t h = 0xCBF29CE484222325ull;
  auto mix = [&h](const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  };
  for (const LaunchBuffer& b : launch_buffers(c)) mix(b.bytes.data(), b.bytes.size());
  const DecodeParams& p = c.d.p;
  const uint64_t scalars[] = {p.max_blocks_per_seq, p.num_q_heads, p.num_kv_heads, p.head_dim, p.block_size,
                              p.q_stride, p.v_block_stride_bytes, p.v_data_section_bytes, p.sliding_window,
                              p.num_seqs};
  mix(reinterpret_cast<const uint8_t*>(scalars), sizeof scalars);
  return h;
}

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
    if (!r.error.empty()) return r;
    if (fault_breaks_invariance(fault_)) {
      damage_invariance(c, r);
      return r;
    }
    if (!*fault_category(fault_, c.kind)) return r;
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
  // The level I faults: each rewrites the output the way its mutant would (docs/mutants.md).
  void damage_invariance(const GoldenCase& c, CaseResult& r) {
    const bool decode = c.kind == CaseKind::decode;
    if (fault_ == Fault::dense_large_batch && decode && c.d.p.num_seqs > kDenseBatchSeqs && ex2_) {
      // A NaN factor: V is read here, skipped by THRESH = -1; its NaN sum gives the same bits.
      const std::vector<uint16_t> o = decode_with_threshold(c, -1.0f, *ex2_);
      std::memcpy(r.buffers["output"].data(), o.data(), o.size() * 2);
    } else if (fault_ == Fault::block_parity_lsb && decode) {
      const DecodeParams& p = c.d.p;
      flip_lowest_bits(c, r.buffers["output"], [&](uint32_t s) {
        const int32_t L = c.d.seq_lens[s];
        return c.d.block_tables[uint64_t(s) * p.max_blocks_per_seq + uint64_t(L - 1) / p.block_size] & 1;
      });
    } else if (fault_ == Fault::writer_contiguous && !decode) {
      const WriterCase& w = c.w;
      const std::vector<int64_t> slots = contiguous_shortcut_slots(w.slot_mapping);
      if (slots == w.slot_mapping) return;
      GuardedBuffer& k = r.buffers["k_cache"];
      GuardedBuffer& v = r.buffers["v_cache"];
      std::memcpy(k.data(), w.k_init.data(), w.k_init.size());
      std::memcpy(v.data(), w.v_init.data(), w.v_init.size());
      reshape_and_cache_model(c.format, w.key, w.value, {k.data(), k.size()}, {v.data(), v.size()}, slots, w.p);
    } else if (fault_ == Fault::repeat_lsb && decode) {
      if (seen_[launch_hash(c)]++ > 0) flip_lowest_bits(c, r.buffers["output"], [](uint32_t) { return true; });
    }
  }

  void damage_writer(const GoldenCase& c, CaseResult& r) {
    const WriterCase& w = c.w;
    const int64_t s = first_written_slot(w);
    if (s < 0) return;
    const CacheGeometry g = pool_geometry(w);
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
      const std::vector<uint16_t> o = decode_with_threshold(c, -1.0f, *ex2_);
      std::memcpy(out.data(), o.data(), o.size() * 2);
    }
  }

  std::unique_ptr<Backend> inner_;
  Fault fault_;
  const Ex2Profile* ex2_;
  std::map<uint64_t, uint64_t> seen_;  // repeat-lsb: launches run so far, by launch_hash
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
    case Fault::block_parity_lsb: return w ? "" : "output-value";
    default: return "";  // the other level I faults leave W/D exact on the committed suites
  }
}

int fault_mutant(Fault f) {
  switch (f) {
    case Fault::thresh_ge: return 5;
    case Fault::writer_fma: return 13;
    case Fault::expf_no_split: return 14;
    case Fault::dense_large_batch: return 18;
    case Fault::block_parity_lsb: return 19;
    case Fault::writer_contiguous: return 20;
    default: return 0;
  }
}

bool fault_breaks_invariance(Fault f) {
  return f == Fault::dense_large_batch || f == Fault::block_parity_lsb || f == Fault::writer_contiguous ||
         f == Fault::repeat_lsb;
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

}  // namespace tqref::testing
