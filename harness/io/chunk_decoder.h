// The HDF5 filters tqref accepts, undone by tqref itself on bytes read straight from an untrusted
// file (docs/reliability.md, "Untrusted files"): fletcher32 verified, deflate inflated with an
// output cap, shuffle undone. libhdf5 never decodes these bytes in tqref's process; this code
// does, so every size it meets is checked against the one it expects before it writes a byte
// (fuzz target: tests/fuzz/fuzz_chunk_decoder.cpp). The rules are libhdf5 1.10's (H5Zdeflate.c,
// H5Zshuffle.c, H5Zfletcher32.c, H5checksum.c), so a chunk decodes here exactly as it would there.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tqref::h5 {

// HDF5's filter identifiers (H5Zpublic.h): the only three tqref writes and reads.
inline constexpr uint16_t kFilterDeflate = 1, kFilterShuffle = 2, kFilterFletcher32 = 3;

// One filter of a dataset's pipeline, in the order the writer applied them.
struct FilterStep {
  uint16_t id = 0;
  uint32_t shuffle_size = 0;  // shuffle only: the element size it was set with (its cd_values[0])
};

// HDF5's Fletcher-32 (H5_checksum_fletcher32): 16-bit big-endian words, sums reduced every 360
// words, a trailing odd byte as the high half of a last word; result sum2 << 16 | sum1.
uint32_t fletcher32(const uint8_t* data, size_t n);

// fletcher32's filter on read, on a chunk whose last 4 bytes (little-endian) are the checksum of
// the bytes before them; "" or why not. As libhdf5, a checksum stored with the bytes of each 16-bit
// half swapped (HDF5 before 1.6.?) is accepted too.
std::string fletcher32_problem(const uint8_t* data, size_t size);

// Per-thread working memory of decode_chunk, reused between chunks.
struct ChunkScratch {
  std::vector<uint8_t> a, b;
};

// Undoes `pipeline` on the `stored_size` bytes of one chunk, skipping filter i where bit i of
// `mask` is set (the chunk's filter mask), and writes exactly `chunk_bytes` bytes to `out`.
// Returns "" or why the chunk is corrupt: a checksum mismatch, a deflate stream that is damaged or
// inflates past its chunk, or a result of another size. Never reads past `stored` nor writes past
// chunk_bytes bytes of `out`; its own allocations are at most chunk_bytes + 4 per filter, twice.
std::string decode_chunk(const uint8_t* stored, size_t stored_size, const std::vector<FilterStep>& pipeline,
                         uint32_t mask, uint64_t chunk_bytes, ChunkScratch& scratch, uint8_t* out);

}  // namespace tqref::h5
