// Writer half of the failure anatomy: which fields (K, codes, scales) of which written slots and
// groups differ, how scale bytes differ, and what changed outside the written rows.
#include <algorithm>
#include <bit>
#include <set>
#include <unordered_set>

#include "anatomy/anatomy_parts.h"
#include "judge/level_i_variants.h"

namespace tqref::anatomy {

using namespace golden;  // the cases the anatomy reads (harness/io)
using namespace judge;   // their results and verdicts (harness/judge)

namespace {

struct WriterFacts {
  uint64_t k = 0, codes = 0, scales = 0;        // differing bytes inside written rows
  uint64_t scale_one_code = 0, single_bit = 0;  // ... of which: scale one fp8 code away; one bit
  uint64_t outside = 0, padding = 0;            // bytes of unwritten slots; V padding bytes
  std::set<int64_t> wrong_slots, outside_slots;
  std::set<int64_t> unwritten;                  // wrong slots whose K, code and scale rows all
                                                // still hold their initial bytes
  std::set<uint32_t> groups;                    // group index in the token row (codes, scales)
  std::set<std::string> fields_wrong;
};

// Two fp8 E4M3 bytes of one sign whose magnitudes are neighbouring codes.
bool one_code_apart(uint8_t a, uint8_t b) {
  return (a & 0x80) == (b & 0x80) && (a > b ? a - b : b - a) == 1;
}

void scan(const GoldenCase& c, const uint8_t* got, const std::vector<uint8_t>& want, bool is_k,
          const std::unordered_set<int64_t>& written, WriterFacts& f) {
  const CacheGeometry g = pool_geometry(c.w);
  const FormatTraits& t = traits(c.format);
  const uint64_t code_row = g.v_code_row_bytes(t.bits), scale_row = g.v_scale_row_bytes();
  for (uint64_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    int64_t slot = -1;
    const char* field = "K";
    uint32_t group = 0;
    if (is_k) {
      slot = int64_t(i / g.k_row_bytes());
    } else {
      const uint64_t blk = i / g.v_block_stride_bytes, in = i % g.v_block_stride_bytes;
      if (in < g.block_size * code_row) {
        slot = int64_t(blk * g.block_size + in / code_row);
        field = "codes";
        group = uint32_t((in % code_row) / t.group_code_bytes);
      } else if (in >= g.v_data_section_bytes && in < g.v_data_section_bytes + g.block_size * scale_row) {
        const uint64_t r = in - g.v_data_section_bytes;
        slot = int64_t(blk * g.block_size + r / scale_row);
        field = "scales";
        group = uint32_t(r % scale_row);
      }
    }
    if (slot < 0) {
      ++f.padding;
      continue;
    }
    if (!written.count(slot)) {
      ++f.outside;
      f.outside_slots.insert(slot);
      continue;
    }
    f.wrong_slots.insert(slot);
    f.fields_wrong.insert(field);
    f.single_bit += std::popcount(unsigned(got[i] ^ want[i])) == 1;
    if (is_k) {
      ++f.k;
    } else {
      f.groups.insert(group);
      if (field[0] == 'c') ++f.codes;
      else ++f.scales, f.scale_one_code += one_code_apart(got[i], want[i]);
    }
  }
}

// The wrong slots whose rows were never written (all three still equal the initial pools).
void find_unwritten(const GoldenCase& c, const CaseResult& r, WriterFacts& f) {
  const CacheGeometry g = pool_geometry(c.w);
  const uint32_t bits = traits(c.format).bits;
  const uint8_t* k = r.buffers.at("k_cache").data();
  const uint8_t* v = r.buffers.at("v_cache").data();
  auto same = [](const uint8_t* a, const std::vector<uint8_t>& b, uint64_t off, uint64_t n) {
    return std::equal(a + off, a + off + n, b.begin() + int64_t(off));
  };
  for (int64_t s : f.wrong_slots)
    if (same(k, c.w.k_init, g.k_row_offset(s), g.k_row_bytes()) &&
        same(v, c.w.v_init, g.v_code_row_offset(s, bits), g.v_code_row_bytes(bits)) &&
        same(v, c.w.v_init, g.v_scale_row_offset(s), g.v_scale_row_bytes()))
      f.unwritten.insert(s);
}

std::string slots_text(const std::set<int64_t>& s) {
  std::vector<uint32_t> v(s.begin(), s.end());
  return ranges_text(v);
}

// How the bytes written outside the rows relate to the written slots.
std::string outside_phrase(const WriterFacts& f, const std::unordered_set<int64_t>& written) {
  bool next = !f.outside_slots.empty();
  for (int64_t s : f.outside_slots) next = next && written.count(s - 1);
  const std::string where = next ? " (each one slot after a written slot)"
                            : f.outside_slots.size() == 1 && *f.outside_slots.begin() == 0 ? " (slot 0)" : "";
  return count_of(f.outside, "byte") + " of " + count_of(f.outside_slots.size(), "slot") +
         " no token maps to changed" + where;
}

}  // namespace

AnatomyFacts writer_anatomy(const GoldenCase& c, const CaseResult& r) {
  std::unordered_set<int64_t> written;
  for (int64_t s : c.w.slot_mapping)
    if (s >= 0) written.insert(s);
  WriterFacts f;
  scan(c, r.buffers.at("k_cache").data(), c.w.k_expected, true, written, f);
  scan(c, r.buffers.at("v_cache").data(), c.w.v_expected, false, written, f);
  find_unwritten(c, r, f);
  AnatomyFacts a;
  const uint64_t values = f.k + f.codes + f.scales;
  a.values_wrong = values > 0;
  a.pools_differ = values + f.outside + f.padding > 0;
  std::vector<std::string> parts, exact;
  for (const char* field : {"K", "codes", "scales"})
    if (!f.fields_wrong.count(field)) exact.push_back(field);
  if (a.values_wrong && f.unwritten.size() == f.wrong_slots.size()) {
    parts.push_back(std::to_string(f.unwritten.size()) + " of " + count_of(written.size(), "written slot") +
                    " left at their initial bytes (slots " + slots_text(f.unwritten) + ")");
    exact.clear();
  } else if (a.values_wrong) {
    std::vector<std::string> fields;
    if (f.k) fields.push_back(count_of(f.k, "K byte"));
    if (f.codes) fields.push_back(count_of(f.codes, "code byte"));
    if (f.scales) fields.push_back(count_of(f.scales, "scale byte"));
    std::vector<uint32_t> groups(f.groups.begin(), f.groups.end());
    std::string p = join_and(fields) + " wrong in " + std::to_string(f.wrong_slots.size()) + " of " +
                    count_of(written.size(), "written slot") + " (" +
                    named_ranges("slot", {f.wrong_slots.begin(), f.wrong_slots.end()}) + ")";
    if (!f.unwritten.empty()) p += ", " + std::to_string(f.unwritten.size()) + " of them left unwritten";
    if (!groups.empty()) p += ", " + named_ranges("group", groups) + " of the token row";
    if (f.scales && f.scale_one_code == f.scales && f.scales == values) {
      p += ", each scale byte one fp8 code away";
      a.pattern = "scale-one-code";
    } else if (f.single_bit == values) {
      p += ", each byte one bit off";
      a.pattern = "single-bit";
    }
    parts.push_back(p);
  } else {
    parts.push_back("every K, code and scale byte of the " + std::to_string(written.size()) + " written slots exact");
  }
  if (!exact.empty() && a.values_wrong) parts.push_back(join_and(exact) + " exact");
  if (f.outside) parts.push_back(outside_phrase(f, written));
  if (f.padding) parts.push_back(count_of(f.padding, "V padding byte") + " changed");
  a.what = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) a.what += "; " + parts[i];
  if (!f.unwritten.empty() && f.unwritten.size() == f.wrong_slots.size())
    a.suspect = "tokens not written (an early return, a wrong grid or slot)";
  else if (a.pattern == "single-bit") a.suspect = "a flipped bit (memory corruption or a race), not an arithmetic rule";
  else if (a.pattern == "scale-one-code") a.suspect = "the scale's rounding (the fp8 encoder's rounding mode, FMA in nsq/rsq)";
  else if (f.outside && !a.values_wrong) a.suspect = "slot addressing (tokens written to other slots)";
  else if (f.padding) a.suspect = "the V block layout (data section or block stride)";
  else if (f.codes && f.scales) a.suspect = "the code index (the bounds compare) or the inv scaling";
  else if (f.k && !f.codes && !f.scales) a.suspect = "the K copy (vector width or key stride)";
  else a.suspect = "the quantizer of docs/spec.md section 4";
  std::vector<uint32_t> groups(f.groups.begin(), f.groups.end());
  a.json = {{"written_slots", written.size()},
            {"wrong_slots", f.wrong_slots.size()},
            {"k_bytes", f.k},
            {"code_bytes", f.codes},
            {"scale_bytes", f.scales},
            {"scale_one_code", f.scale_one_code},
            {"single_bit", f.single_bit},
            {"unwritten_slots", slots_text(f.unwritten)},
            {"groups_wrong", ranges_text(groups, 64)},
            {"slots_wrong", slots_text(f.wrong_slots)},
            {"outside_bytes", f.outside},
            {"outside_slots", slots_text(f.outside_slots)},
            {"padding_bytes", f.padding}};
  return a;
}

}  // namespace tqref::anatomy
