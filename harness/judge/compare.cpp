#include "judge/compare.h"

#include <cstring>
#include <unordered_set>

#include "io/sparse_pool.h"
#include "judge/launch_buffers.h"

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

std::string hex(uint32_t v, int width) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%0*x", width * 2, v);
  return b;
}

namespace {

uint32_t elem(const uint8_t* p, uint64_t off, int width) {
  return width == 2 ? uint32_t(p[off] | (p[off + 1] << 8)) : p[off];
}

// Records one differing element: counts its category, keeps the first kMaxListed.
void note(CaseVerdict& v, Mismatch m) {
  ++v.categories[m.category];
  if (v.first.size() < kMaxListed) v.first.push_back(std::move(m));
}

// Where a byte of a writer pool lives, and whether the launch writes it.
struct PoolPlace {
  std::string where;
  bool written = false;   // inside a row that a token with slot >= 0 writes
  const char* section;    // category if written: "k-value", "v-code", "v-scale"
  uint64_t row_begin = 0, row_end = 0;  // the written row section holding the byte
};

PoolPlace k_place(const WriterCase& w, const std::unordered_set<int64_t>& slots, uint64_t off) {
  const uint64_t n = uint64_t(w.p.num_kv_heads) * w.p.head_dim, e = off / 2;
  const uint64_t slot = e / n, in = e % n;
  PoolPlace p;
  p.section = "k-value";
  p.written = slots.count(int64_t(slot)) > 0;
  p.row_begin = slot * n * 2;
  p.row_end = p.row_begin + n * 2;
  p.where = "K block " + std::to_string(slot / w.p.block_size) + " slot " +
            std::to_string(slot % w.p.block_size) + " head " + std::to_string(in / w.p.head_dim) +
            " dim " + std::to_string(in % w.p.head_dim);
  return p;
}

PoolPlace v_place(const WriterCase& w, Format f, const std::unordered_set<int64_t>& slots,
                  uint64_t off) {
  const FormatTraits& t = traits(f);
  const uint64_t n = uint64_t(w.p.num_kv_heads) * w.p.head_dim, B = w.p.block_size;
  const uint64_t code_row = n * t.bits / 8, scale_row = n / kGroupSize;
  const uint64_t block = off / w.p.v_block_stride_bytes, in = off % w.p.v_block_stride_bytes;
  PoolPlace p;
  p.section = "v-code";
  const std::string blk = "V block " + std::to_string(block);
  auto group_str = [&](uint64_t g) {
    const uint64_t e0 = g * kGroupSize;
    return " head " + std::to_string(e0 / w.p.head_dim) + " group " + std::to_string(g) + " (dims " +
           std::to_string(e0 % w.p.head_dim) + ".." + std::to_string(e0 % w.p.head_dim + 15) + ")";
  };
  if (in < B * code_row) {
    const uint64_t slot = in / code_row, byte = in % code_row;
    p.written = slots.count(int64_t(block * B + slot)) > 0;
    p.row_begin = block * w.p.v_block_stride_bytes + slot * code_row;
    p.row_end = p.row_begin + code_row;
    p.where = blk + " codes slot " + std::to_string(slot) + group_str(byte / t.group_code_bytes) +
              " byte " + std::to_string(byte % t.group_code_bytes);
  } else if (in >= w.p.v_data_section_bytes && in < w.p.v_data_section_bytes + B * scale_row) {
    const uint64_t r = in - w.p.v_data_section_bytes, slot = r / scale_row;
    p.section = "v-scale";
    p.written = slots.count(int64_t(block * B + slot)) > 0;
    p.row_begin = block * w.p.v_block_stride_bytes + w.p.v_data_section_bytes + slot * scale_row;
    p.row_end = p.row_begin + scale_row;
    p.where = blk + " scales slot " + std::to_string(slot) + group_str(r % scale_row);
  } else {
    p.where = blk + " padding byte " + std::to_string(in);
  }
  return p;
}

void compare_pool(const GoldenCase& c, const std::string& name, const GuardedBuffer& got,
                  const std::vector<uint8_t>& expected, const std::vector<uint8_t>& initial,
                  CaseVerdict& v) {
  const bool is_k = name == "k_cache";
  const int width = is_k ? 2 : 1;
  std::unordered_set<int64_t> slots;
  for (int64_t s : c.w.slot_mapping)
    if (s >= 0) slots.insert(s);
  v.bytes_compared += expected.size();
  if (std::memcmp(got.data(), expected.data(), expected.size()) == 0) return;
  for (uint64_t off = 0; off < expected.size(); off += width) {
    const uint32_t e = elem(expected.data(), off, width), g = elem(got.data(), off, width);
    if (e == g) continue;
    const uint32_t i0 = elem(initial.data(), off, width);
    v.bytes_differing += width;
    PoolPlace pl = is_k ? k_place(c.w, slots, off) : v_place(c.w, c.format, slots, off);
    // row-not-written: the whole row section still holds its initial bytes (one byte equal to
    // its initial value by chance is an ordinary wrong value)
    const uint64_t len = pl.row_end - pl.row_begin;
    const bool unwritten =
        pl.written && std::memcmp(got.data() + pl.row_begin, initial.data() + pl.row_begin, len) == 0;
    const char* cat = !pl.written ? "untouched-modified" : unwritten ? "row-not-written" : pl.section;
    if (c.sparse) {  // compact block -> its place in the pool of production size
      const BlockBytes b = block_bytes(c);
      pl.where += " (physical block " + std::to_string(c.sparse->block_ids[off / (is_k ? b.k : b.v)]) + ")";
    }
    note(v, {name, int64_t(off), cat, pl.where, e, g, i0, width});
  }
}

void compare_output(const GoldenCase& c, const GuardedBuffer& got, CaseVerdict& v) {
  const DecodeCase& d = c.d;
  const uint64_t D = d.p.head_dim, QH = d.p.num_q_heads;
  const uint64_t bytes = d.out_expected.size() * 2;
  v.bytes_compared += bytes;
  if (std::memcmp(got.data(), d.out_expected.data(), bytes) == 0) return;
  for (uint64_t i = 0; i < d.out_expected.size(); ++i) {
    const uint32_t e = d.out_expected[i], g = elem(got.data(), 2 * i, 2), i0 = d.out_init[i];
    if (e == g) continue;
    v.bytes_differing += 2;
    const uint64_t row = i / D, s = row / QH;
    const char* cat;
    if (d.seq_lens[s] <= 0) cat = "untouched-modified";
    else if (g == i0 && e != i0) cat = "row-not-written";
    else if (bf16_is_nan(uint16_t(g)) && !bf16_is_nan(uint16_t(e)) && !d.diag.skip_count.empty() && d.diag.skip_count[row] > 0)
      cat = "skipped-v-read";
    else cat = "output-value";
    const std::string where = "seq " + std::to_string(s) + " qhead " + std::to_string(row % QH) +
                              " dim " + std::to_string(i % D) + " (L " +
                              std::to_string(d.seq_lens[s]) + ")";
    note(v, {"output", int64_t(2 * i), cat, where, e, g, i0, 2});
  }
}

void compare_guards(const std::string& name, const GuardedBuffer& b, CaseVerdict& v) {
  const uint64_t size = b.size();
  for (uint64_t i = 0; i < kGuardBytes; ++i) {
    const uint8_t before = b.bytes[i], after = b.bytes[kGuardBytes + size + i];
    if (before != guard_byte(i)) {
      const int64_t off = int64_t(i) - int64_t(kGuardBytes);
      note(v, {name, off, "guard", "guard band before " + name + ", byte " + std::to_string(off),
               guard_byte(i), before, guard_byte(i), 1});
      ++v.bytes_differing;
    }
    if (after != guard_byte(i)) {
      note(v, {name, int64_t(size + i), "guard",
               "guard band after " + name + ", byte +" + std::to_string(i), guard_byte(i), after,
               guard_byte(i), 1});
      ++v.bytes_differing;
    }
  }
}

// Pools of production size: the unstored blocks a backend read back after the launch
// (io/sparse_pool.h sampled_blocks, concatenated as "<pool>_samples") must still hold the pool's
// background byte. A backend without the whole pool (the model) returns no samples.
void compare_samples(const GoldenCase& c, const CaseResult& r, CaseVerdict& v) {
  if (!c.sparse) return;
  const BlockBytes b = block_bytes(c);
  const auto& returned = c.kind == CaseKind::writer ? r.buffers : r.inputs;  // the decoder only reads them
  const char* category = c.kind == CaseKind::writer ? "untouched-modified" : "input-modified";
  for (const bool is_k : {true, false}) {
    const std::string name = is_k ? "k_cache_samples" : "v_cache_samples";
    auto it = returned.find(name);
    if (it == returned.end()) continue;
    const uint64_t bytes = is_k ? b.k : b.v;
    const std::vector<uint64_t> ids = sampled_blocks(*c.sparse, bytes);
    if (it->second.size() != ids.size() * bytes) {
      v.error = "backend returned " + std::to_string(it->second.size()) + " bytes of '" + name + "'; expected " +
                std::to_string(ids.size() * bytes) + " (io/sparse_pool.h sampled_blocks)";
      return;
    }
    v.bytes_compared += it->second.size();
    for (uint64_t off = 0; off < it->second.size(); ++off) {
      const uint8_t got = it->second.data()[off];
      if (got == c.sparse->background) continue;
      ++v.bytes_differing;
      const std::string where = std::string(is_k ? "K" : "V") + " pool block " + std::to_string(ids[off / bytes]) +
                                " byte " + std::to_string(off % bytes) + " (unstored, read back after the launch)";
      note(v, {name, int64_t(off), category, where, c.sparse->background, got, c.sparse->background, 1});
    }
  }
}

// An input buffer must come back byte for byte as uploaded.
void compare_input(const LaunchBuffer& in, const GuardedBuffer& got, CaseVerdict& v) {
  v.bytes_compared += in.bytes.size();
  if (std::memcmp(got.data(), in.bytes.data(), in.bytes.size()) == 0) return;
  for (uint64_t off = 0; off < in.bytes.size(); ++off) {
    if (got.data()[off] == in.bytes[off]) continue;
    ++v.bytes_differing;
    note(v, {in.name, int64_t(off), "input-modified", "input " + in.name + " byte " + std::to_string(off),
             in.bytes[off], got.data()[off], in.bytes[off], 1});
  }
}

}  // namespace

CaseVerdict compare_case(const GoldenCase& c, const CaseResult& r) {
  CaseVerdict v;
  v.name = c.name;
  v.kernel = kernel_name(c.kind, c.format);
  v.kind = kind_name(c.kind);
  if (!r.error.empty()) {
    v.error = r.error;
    return v;
  }
  for (const std::string& name : output_buffers(c.kind)) {
    auto it = r.buffers.find(name);
    const uint64_t want = c.kind == CaseKind::decode ? c.d.out_expected.size() * 2
                          : name == "k_cache"         ? c.w.k_expected.size()
                                                      : c.w.v_expected.size();
    if (it == r.buffers.end() || it->second.bytes.size() != want + 2 * kGuardBytes) {
      v.error = "backend returned no '" + name + "' buffer of " + std::to_string(want) +
                " bytes (+ guards)";
      return v;
    }
    compare_guards(name, it->second, v);
    if (c.kind == CaseKind::decode) compare_output(c, it->second, v);
    else if (name == "k_cache") compare_pool(c, name, it->second, c.w.k_expected, c.w.k_init, v);
    else compare_pool(c, name, it->second, c.w.v_expected, c.w.v_init, v);
  }
  if (!r.inputs.empty()) {  // backends that return their input buffers (the GPU)
    for (const LaunchBuffer& in : launch_buffers(c)) {
      if (in.output) continue;
      auto it = r.inputs.find(in.name);
      if (it == r.inputs.end() || it->second.bytes.size() != in.bytes.size() + 2 * kGuardBytes) {
        v.error = "backend returned no input buffer '" + in.name + "' of " +
                  std::to_string(in.bytes.size()) + " bytes (+ guards)";
        return v;
      }
      compare_guards(in.name, it->second, v);
      compare_input(in, it->second, v);
    }
  }
  compare_samples(c, r, v);
  if (!v.error.empty()) return v;
  v.pass = v.bytes_differing == 0;
  return v;
}

}  // namespace tqref::judge
