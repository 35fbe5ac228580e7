// libFuzzer target: the chunk decoder (harness/io/chunk_decoder.h), the code of tqref's own
// process that undoes fletcher32, deflate and shuffle on bytes read straight from an untrusted
// file. The first 8 bytes of an input choose the case, the rest is the chunk:
//   byte 0: the pipeline, 2 bits per filter (0 none, 1 deflate, 2 shuffle, 3 fletcher32), up to 4
//           filters in the writer's order; with bit 7 of byte 1 set, a round trip instead (below)
//   byte 1: the filter mask (bits 0..3), bit 7 as above;  byte 2: the shuffle element size
//   bytes 3..5: the chunk size in bytes (little-endian, the low 20 bits: at most 1 MiB - 1, the size
//           of tqref's chunks; larger ones only make each execution slower)
// Must hold: decode_chunk returns "" having written exactly the chunk size, or a reason having
// written nothing past it (a guard region after the output must stay untouched); it never reads
// outside the input (ASan). Round trip: the chunk bytes, shuffled, deflated and checksummed here
// as libhdf5 writes them, must decode to themselves.
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/chunk_decoder.h"

using namespace tqref::h5;

namespace {

constexpr size_t kHeader = 8, kGuard = 64;

// shuffle's filter on write: byte j of element i to j * n + i, trailing bytes in place.
std::vector<uint8_t> shuffle(const std::vector<uint8_t>& in, uint32_t elem) {
  std::vector<uint8_t> out = in;
  if (elem <= 1 || elem > in.size()) return out;
  const size_t n = in.size() / elem;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < elem; ++j) out[j * n + i] = in[i * elem + j];
  return out;
}

void round_trip(const uint8_t* data, size_t size, uint32_t elem) {
  const std::vector<uint8_t> plain(data, data + size), shuffled = shuffle(plain, elem);
  uLongf packed_size = compressBound(uLong(size));
  std::vector<uint8_t> packed(packed_size + 4);
  if (compress2(packed.data(), &packed_size, shuffled.data(), uLong(size), 1) != Z_OK) std::abort();
  const uint32_t sum = fletcher32(packed.data(), packed_size);
  for (int i = 0; i < 4; ++i) packed[packed_size + size_t(i)] = uint8_t(sum >> (8 * i));  // little-endian
  const std::vector<FilterStep> pipeline = {{kFilterShuffle, elem}, {kFilterDeflate, 0}, {kFilterFletcher32, 0}};
  std::vector<uint8_t> out(size);
  ChunkScratch scratch;
  if (!decode_chunk(packed.data(), packed_size + 4, pipeline, 0, size, scratch, out.data()).empty() || out != plain)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < kHeader) return 0;
  const uint32_t elem = data[2];
  const uint64_t chunk_bytes = (uint64_t(data[3]) | uint64_t(data[4]) << 8 | uint64_t(data[5]) << 16) & 0xFFFFF;
  const uint8_t* stored = data + kHeader;
  const size_t stored_size = size - kHeader;
  if (data[1] & 0x80) {
    round_trip(stored, stored_size, elem);
    return 0;
  }
  std::vector<FilterStep> pipeline;
  for (int k = 0; k < 4; ++k)
    if (const int f = data[0] >> (2 * k) & 3; f != 0)
      pipeline.push_back({uint16_t(f == 1 ? kFilterDeflate : f == 2 ? kFilterShuffle : kFilterFletcher32), elem});
  // The input in a buffer of its own size: ASan sees any read past it.
  const std::vector<uint8_t> in(stored, stored + stored_size);
  std::vector<uint8_t> out(chunk_bytes + kGuard, 0xA5);
  ChunkScratch scratch;
  decode_chunk(in.data(), in.size(), pipeline, data[1] & 0x0F, chunk_bytes, scratch, out.data());
  for (size_t i = chunk_bytes; i < out.size(); ++i)
    if (out[i] != 0xA5) std::abort();  // written past the chunk
  return 0;
}
