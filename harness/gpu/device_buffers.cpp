#include "gpu/device_buffers.h"

#include <cstring>

#include "io/sparse_pool.h"

namespace tqref::gpu {

using golden::CaseKind;
using golden::GoldenCase;
using judge::GuardedBuffer;
using judge::kGuardBytes;
using judge::LaunchBuffer;

namespace {

// A sparse case's K or V pool: allocated whole.
bool whole_pool(const GoldenCase& c, const std::string& name) {
  return c.sparse && (name == "k_cache" || name == "v_cache");
}

uint64_t pool_block_bytes(const GoldenCase& c, const std::string& name) {
  const golden::BlockBytes b = golden::block_bytes(c);
  return name == "k_cache" ? b.k : b.v;
}

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The bytes of `b` the kernel is launched with: a sparse case's slots and block-table entries in
// physical ids (io/sparse_pool.h), made in `storage`; every other buffer as the case holds it.
std::span<const uint8_t> launch_bytes(const GoldenCase& c, const LaunchBuffer& b, std::vector<uint8_t>& storage) {
  if (!c.sparse) return b.bytes;
  const golden::SparsePool& sp = *c.sparse;
  if (c.kind == CaseKind::writer && b.name == "slot_mapping") {
    std::vector<int64_t> s = c.w.slot_mapping;
    for (int64_t& x : s) x = golden::physical_slot(sp, c.w.p.block_size, x);
    return storage = as_bytes(s);
  }
  if (c.kind == CaseKind::decode && b.name == "block_tables") {
    std::vector<int32_t> t = c.d.block_tables;
    for (int32_t& x : t) x = golden::physical_table_entry(sp, c.d.num_blocks, x);
    return storage = as_bytes(t);
  }
  return b.bytes;
}

// Both guard bands of d, which holds data_bytes between them, as every buffer has them
// (judge::GuardedBuffer).
void upload_guard_bands(DeviceBuffer& d, uint64_t data_bytes) {
  static const GuardedBuffer bands = GuardedBuffer::with_guards({});
  d.upload(bands.bytes.data(), kGuardBytes, 0);
  d.upload(bands.bytes.data() + kGuardBytes, kGuardBytes, kGuardBytes + data_bytes);
}

// [guard][data][guard] into d. A large buffer goes up from where it lies, its bands beside it: a
// packed host copy would cost another pass over megabytes per launch.
void upload_guarded(DeviceBuffer& d, std::span<const uint8_t> data) {
  constexpr uint64_t kPackBelow = 1 << 20;
  if (data.size() < kPackBelow) {
    const GuardedBuffer host = GuardedBuffer::with_guards(data);
    d.upload(host.bytes.data(), host.bytes.size());
    return;
  }
  upload_guard_bands(d, data.size());
  d.upload(data.data(), data.size(), kGuardBytes);
}

// The unstored blocks of a whole pool that the judge checks for the background (sampled_blocks).
GuardedBuffer read_samples(const GoldenCase& c, const std::string& name, const DeviceBuffer& dev) {
  const uint64_t bb = pool_block_bytes(c, name);
  const std::vector<uint64_t> ids = golden::sampled_blocks(*c.sparse, bb);
  std::vector<uint8_t> s(ids.size() * bb);
  for (size_t i = 0; i < ids.size(); ++i) dev.download(s.data() + i * bb, bb, kGuardBytes + ids[i] * bb);
  return GuardedBuffer::with_guards(s);
}

}  // namespace

uint64_t device_bytes(const GoldenCase& c) {
  uint64_t n = 0;
  for (const LaunchBuffer& b : judge::launch_buffers(c))
    n += 2 * kGuardBytes +
         (whole_pool(c, b.name) ? c.sparse->pool_blocks * pool_block_bytes(c, b.name) : b.bytes.size());
  return n;
}

DeviceBuffer upload_buffer(const GoldenCase& c, const LaunchBuffer& b) {
  if (!whole_pool(c, b.name)) {
    std::vector<uint8_t> storage;
    const std::span<const uint8_t> data = launch_bytes(c, b, storage);
    DeviceBuffer d(data.size() + 2 * kGuardBytes);
    upload_guarded(d, data);
    return d;
  }
  const golden::SparsePool& sp = *c.sparse;
  const uint64_t bb = pool_block_bytes(c, b.name), data = sp.pool_blocks * bb;
  DeviceBuffer d(data + 2 * kGuardBytes);
  d.fill(sp.background, data, kGuardBytes);
  upload_guard_bands(d, data);
  for (size_t j = 0; j < sp.block_ids.size(); ++j)
    d.upload(b.bytes.data() + j * bb, bb, kGuardBytes + uint64_t(sp.block_ids[j]) * bb);
  return d;
}

void download_buffer(const GoldenCase& c, const LaunchBuffer& b, const DeviceBuffer& dev, judge::CaseResult& r) {
  auto& to = b.output ? r.buffers : r.inputs;
  GuardedBuffer g;
  if (!whole_pool(c, b.name)) {
    g.bytes.resize(dev.bytes());
    dev.download(g.bytes.data(), g.bytes.size());
    // launched in physical ids: unchanged ones are the case's compact ones (a change is reported)
    std::vector<uint8_t> storage;
    const std::span<const uint8_t> launched = launch_bytes(c, b, storage);
    if (launched.data() != b.bytes.data() && std::memcmp(g.data(), launched.data(), launched.size()) == 0)
      std::memcpy(g.data(), b.bytes.data(), b.bytes.size());
    to[b.name] = std::move(g);
    return;
  }
  const golden::SparsePool& sp = *c.sparse;
  const uint64_t bb = pool_block_bytes(c, b.name), data = sp.pool_blocks * bb;
  g.bytes.resize(b.bytes.size() + 2 * kGuardBytes);
  dev.download(g.bytes.data(), kGuardBytes, 0);
  dev.download(g.bytes.data() + kGuardBytes + b.bytes.size(), kGuardBytes, kGuardBytes + data);
  for (size_t j = 0; j < sp.block_ids.size(); ++j)
    dev.download(g.data() + j * bb, bb, kGuardBytes + uint64_t(sp.block_ids[j]) * bb);
  to[b.name] = std::move(g);
  to[b.name + "_samples"] = read_samples(c, b.name, dev);
}

}  // namespace tqref::gpu
