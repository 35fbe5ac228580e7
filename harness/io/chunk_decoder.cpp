#include "io/chunk_decoder.h"

#include <zlib.h>

#include <climits>
#include <cstring>

namespace tqref::h5 {

namespace {

// Bytes as libhdf5 stores a checksum after the data it covers: little-endian.
uint32_t load_le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }


// One zlib stream (deflate's filter writes zlib's format, header and adler32 included) into at
// most `cap` bytes. As libhdf5, the stream must end (Z_STREAM_END); bytes after its end are ignored.
std::string inflate_capped(const uint8_t* in, size_t in_size, uint64_t cap, std::vector<uint8_t>& out, size_t& out_size) {
  if (in_size > UINT_MAX || cap > UINT_MAX) return "a deflate stream above 4 GiB";
  out.resize(size_t(cap) + 1);  // one byte past the cap: a stream that fills it inflates too far
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return "zlib cannot start";
  z.next_in = const_cast<uint8_t*>(in);
  z.avail_in = unsigned(in_size);
  z.next_out = out.data();
  z.avail_out = unsigned(cap) + 1;
  const int rc = inflate(&z, Z_FINISH);
  out_size = size_t(z.total_out);
  inflateEnd(&z);
  if (rc == Z_STREAM_END && out_size <= cap) return "";
  if (out_size > cap) return "a deflate stream that inflates past its chunk of " + std::to_string(cap) + " bytes";
  return "a damaged deflate stream (zlib: " + std::string(rc == Z_BUF_ERROR ? "truncated" : z.msg ? z.msg : "error") + ")";
}

// shuffle's filter on read: byte j of element i was stored at j * n + i; the bytes past the last
// whole element were left in place.
template <size_t S>
void unshuffle_fixed(const uint8_t* in, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < S; ++j) out[i * S + j] = in[j * n + i];
}

void unshuffle(const uint8_t* in, size_t size, uint32_t elem, uint8_t* out) {
  if (size == 0) return;  // `in` and `out` may be null (empty buffers): no memcpy (fuzz finding 10)
  if (elem <= 1 || elem > size) {
    std::memcpy(out, in, size);
    return;
  }
  const size_t n = size / elem;
  switch (elem) {
    case 2: unshuffle_fixed<2>(in, n, out); break;
    case 4: unshuffle_fixed<4>(in, n, out); break;
    case 8: unshuffle_fixed<8>(in, n, out); break;
    default:
      for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < elem; ++j) out[i * elem + j] = in[j * n + i];
  }
  std::memcpy(out + n * elem, in + n * elem, size - n * elem);
}

}  // namespace

std::string fletcher32_problem(const uint8_t* data, size_t size) {
  if (size < 4) return "a checksummed chunk of " + std::to_string(size) + " bytes (fewer than its checksum)";
  const uint32_t stored = load_le32(data + size - 4), sum = fletcher32(data, size - 4);
  const uint32_t swapped = (sum & 0x00FF00FFu) << 8 | (sum & 0xFF00FF00u) >> 8;
  if (stored != sum && stored != swapped) return "a checksum mismatch (fletcher32)";
  return "";
}

uint32_t fletcher32(const uint8_t* data, size_t n) {
  uint32_t sum1 = 0, sum2 = 0;
  for (size_t words = n / 2; words > 0;) {
    size_t run = words > 360 ? 360 : words;  // the sums cannot overflow 32 bits within 360 words
    words -= run;
    do {
      sum1 += uint32_t(data[0]) << 8 | data[1];
      sum2 += sum1;
      data += 2;
    } while (--run);
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16);
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16);
  }
  if (n % 2) {
    sum1 += uint32_t(*data) << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xFFFF) + (sum1 >> 16);
    sum2 = (sum2 & 0xFFFF) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xFFFF) + (sum1 >> 16);
  sum2 = (sum2 & 0xFFFF) + (sum2 >> 16);
  return sum2 << 16 | sum1;
}

std::string decode_chunk(const uint8_t* stored, size_t stored_size, const std::vector<FilterStep>& pipeline,
                         uint32_t mask, uint64_t chunk_bytes, ChunkScratch& scratch, uint8_t* out) {
  // Every filter before another in the pipeline may add its 4-byte checksum: the most any
  // intermediate result may hold.
  const uint64_t cap = chunk_bytes + 4 * pipeline.size();
  const uint8_t* cur = stored;
  size_t size = stored_size;
  std::vector<uint8_t>* free_buf = &scratch.a;
  for (size_t k = pipeline.size(); k-- > 0;) {
    if (k < 32 && (mask >> k & 1u)) continue;  // this chunk was stored without filter k
    std::string why;
    switch (pipeline[k].id) {
      case kFilterFletcher32:
        why = fletcher32_problem(cur, size);
        if (why.empty()) size -= 4;
        break;
      case kFilterDeflate: {
        size_t n = 0;
        why = inflate_capped(cur, size, cap, *free_buf, n);
        cur = free_buf->data(), size = n;
        free_buf = free_buf == &scratch.a ? &scratch.b : &scratch.a;
        break;
      }
      case kFilterShuffle:
        free_buf->resize(size);
        unshuffle(cur, size, pipeline[k].shuffle_size, free_buf->data());
        cur = free_buf->data();
        free_buf = free_buf == &scratch.a ? &scratch.b : &scratch.a;
        break;
      default:
        why = "filter " + std::to_string(pipeline[k].id) + "; allowed: deflate (1), shuffle (2), fletcher32 (3)";
    }
    if (!why.empty()) return why;
  }
  if (size != chunk_bytes)
    return "a chunk that decodes to " + std::to_string(size) + " bytes; expected " + std::to_string(chunk_bytes);
  if (size) std::memcpy(out, cur, size);
  return "";
}

}  // namespace tqref::h5
