#include "judge/launch_buffers.h"

#include <bit>

namespace tqref::judge {

using namespace golden;  // the golden case and file format (harness/io)

// Element bytes are copied from host integers: the device layout only on a little-endian host.
static_assert(std::endian::native == std::endian::little);

namespace {

template <class T>
std::span<const uint8_t> bytes_of(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

}  // namespace

std::vector<LaunchBuffer> launch_buffers(const GoldenCase& c) {
  if (c.kind == CaseKind::writer) {
    const WriterCase& w = c.w;
    return {{"key", bytes_of(w.key), false},
            {"value", bytes_of(w.value), false},
            {"k_cache", bytes_of(w.k_init), true},
            {"v_cache", bytes_of(w.v_init), true},
            {"slot_mapping", bytes_of(w.slot_mapping), false}};
  }
  const DecodeCase& d = c.d;
  return {{"q", bytes_of(d.q), false},
          {"k_cache", bytes_of(d.k_init), false},
          {"v_cache", bytes_of(d.v_init), false},
          {"output", bytes_of(d.out_init), true},
          {"block_tables", bytes_of(d.block_tables), false},
          {"seq_lens", bytes_of(d.seq_lens), false}};
}

}  // namespace tqref::judge
