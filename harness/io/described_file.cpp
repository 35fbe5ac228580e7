#include "io/described_file.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "io/hdf5_util.h"

namespace tqref::h5 {

namespace {

// `size` bytes at `offset`, all of them: a file that ends before them was truncated (or changed)
// after the child described it.
std::string pread_all(int fd, uint64_t offset, uint64_t size, uint8_t* out) {
  for (uint64_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, out + done, size_t(size - done), off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string("read error: ") + std::strerror(errno);
    if (n == 0) return "the file ends before byte " + std::to_string(offset + size) + " (truncated?)";
    done += uint64_t(n);
  }
  return "";
}

// The region of the dataset one chunk covers, and how its bytes map between the chunk (always
// whole: HDF5 stores edge chunks at full size) and the dataset, both row-major.
struct ChunkRegion {
  std::vector<uint64_t> start, extent;
  bool partial = false;  // crosses the dataset's edge
};

ChunkRegion region_of(const DatasetDesc& d, uint64_t index) {
  ChunkRegion r;
  const size_t rank = d.dims.size();
  r.start.resize(rank), r.extent.resize(rank);
  for (size_t i = rank; i-- > 0;) {
    const uint64_t per = (d.dims[i] + d.chunk[i] - 1) / d.chunk[i];
    r.start[i] = index % per * d.chunk[i];
    index /= per;
    r.extent[i] = std::min(d.chunk[i], d.dims[i] - r.start[i]);
    r.partial |= r.extent[i] != d.chunk[i];
  }
  return r;
}

// Copies the region's elements from a whole chunk to the dataset. The trailing dimensions that
// the chunk spans whole are one contiguous run on both sides (for tqref's chunks, cut along the
// first axis only, the whole chunk is one memcpy).
void scatter(const DatasetDesc& d, const ChunkRegion& r, const uint8_t* chunk, uint8_t* out) {
  const size_t rank = d.dims.size();
  size_t k = rank - 1;  // the run: dimension k (the region's extent) and every whole one after it
  while (k > 0 && d.chunk[k] == d.dims[k]) --k;
  uint64_t run = r.extent[k] * d.elem;
  for (size_t j = k + 1; j < rank; ++j) run *= d.dims[j];
  std::vector<uint64_t> at(k, 0);  // position within the region, dimensions before k
  for (;;) {
    uint64_t src = 0, dst = 0;
    for (size_t i = 0; i < rank; ++i) {
      const uint64_t x = i < k ? at[i] : 0;
      src = src * d.chunk[i] + x;
      dst = dst * d.dims[i] + r.start[i] + x;
    }
    std::memcpy(out + dst * d.elem, chunk + src * d.elem, size_t(run));
    size_t i = k;
    while (i > 0 && ++at[i - 1] >= r.extent[i - 1]) at[--i] = 0;
    if (i == 0) return;
  }
}

// One chunk of the grid into the dataset (nullptr: decoded and dropped); "" or why it cannot be
// read.
std::string read_chunk(const DescribedFile& f, const DatasetDesc& d, uint64_t index, std::vector<uint8_t>& stored,
                       std::vector<uint8_t>& whole, ChunkScratch& scratch, uint8_t* out) {
  const DatasetDesc::Piece& p = d.pieces[index];
  const ChunkRegion r = region_of(d, index);
  uint64_t chunk_bytes = d.elem;
  for (uint64_t c : d.chunk) chunk_bytes *= c;
  whole.resize(size_t(chunk_bytes));
  if (p.addr == DatasetDesc::kUnallocated) {
    for (uint64_t i = 0; i < chunk_bytes; i += d.elem)
      if (d.fill.empty()) std::memset(whole.data() + i, 0, d.elem);
      else std::memcpy(whole.data() + i, d.fill.data(), d.elem);
  } else {
    stored.resize(size_t(p.size));
    if (std::string why = pread_all(f.file->fd(), p.addr, p.size, stored.data()); !why.empty()) return why;
    const uint32_t mask = r.partial && !d.filter_edges ? UINT32_MAX : p.mask;
    if (std::string why = decode_chunk(stored.data(), stored.size(), d.pipeline, mask, chunk_bytes, scratch, whole.data());
        !why.empty())
      return why;
  }
  if (out) scatter(d, r, whole.data(), out);
  return "";
}

// True when every chunk of `d` carries a fletcher32 checksum over its stored bytes: fletcher32 is
// the pipeline's last filter (the first one undone) and edge chunks are filtered too.
bool checksummed(const DatasetDesc& d) {
  return d.filter_edges && !d.pipeline.empty() && d.pipeline.back().id == kFilterFletcher32;
}

// The checksum of one stored chunk of a checksummed dataset, without decoding it; a chunk whose
// mask skips fletcher32 is decoded instead.
std::string verify_chunk(const DescribedFile& f, const DatasetDesc& d, uint64_t index, std::vector<uint8_t>& stored,
                         std::vector<uint8_t>& whole, ChunkScratch& scratch, uint8_t*) {
  const DatasetDesc::Piece& p = d.pieces[index];
  if (p.addr == DatasetDesc::kUnallocated) return "";
  const size_t last = d.pipeline.size() - 1;
  if (last < 32 && (p.mask >> last & 1u)) return read_chunk(f, d, index, stored, whole, scratch, nullptr);
  stored.resize(size_t(p.size));
  if (std::string why = pread_all(f.file->fd(), p.addr, p.size, stored.data()); !why.empty()) return why;
  return fletcher32_problem(stored.data(), stored.size());
}

// Runs `one` on every chunk of `d` (returning "" or why the chunk cannot be read) and throws for
// the first bad chunk in file order, whichever thread met it. Chunks are independent: each thread
// reads and decodes its own into its own buffers, and writes a region of the output no other chunk
// covers. Plain threads that block when done, up to OpenMP's thread count (--threads): an OpenMP
// region per dataset left its idle threads spinning, and on a machine shared with another job the
// spinning took the core the reading thread needed (check of the standard suite 14 s against 5 s).
using ChunkFn = std::string (*)(const DescribedFile&, const DatasetDesc&, uint64_t, std::vector<uint8_t>&,
                                std::vector<uint8_t>&, ChunkScratch&, uint8_t*);
void for_each_chunk(const DescribedFile& f, const DatasetDesc& d, const std::string& where, ChunkFn one, uint8_t* out) {
  const size_t n = d.pieces.size();
  std::vector<std::string> problems(n);
  std::atomic<size_t> next{0};
  const auto work = [&] {
    std::vector<uint8_t> stored, whole;
    ChunkScratch scratch;
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        problems[i] = one(f, d, i, stored, whole, scratch, out);
      } catch (const std::bad_alloc&) {
        problems[i] = "out of memory";
      }
    }
  };
  // A thread per two chunks at most: a dataset of one to three chunks is read by this thread alone.
  const size_t total = std::max<size_t>(1, std::min(n / 2, size_t(std::max(omp_get_max_threads(), 1))));
  const size_t helpers = total - 1;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < n; ++i)
    if (!problems[i].empty())
      throw Error(where + ": corrupt file: the data cannot be read (chunk " + std::to_string(i) + " of " +
                  std::to_string(n) + ", " + std::to_string(d.pieces[i].size) + " bytes at offset " +
                  std::to_string(d.pieces[i].addr) + ": " + problems[i] + ")");
}

}  // namespace

bool has_hdf5_signature(const InputFile& file) {
  static const uint8_t kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  uint8_t at[8];
  for (uint64_t offset = 0; offset + 8 <= file.size(); offset = offset ? offset * 2 : 512)
    if (pread_all(file.fd(), offset, 8, at).empty() && std::memcmp(at, kSignature, 8) == 0) return true;
  return false;
}

void read_dataset_bytes(const DescribedFile& f, const DatasetDesc& d, const std::string& where, uint8_t* out) {
  uint64_t bytes = d.elem;
  for (uint64_t x : d.dims) bytes *= x;  // fits: the caller checked it against the budget
  if (bytes == 0) return;
  const auto corrupt = [&](const std::string& why) {
    throw Error(where + ": corrupt file: the data cannot be read (" + why + ")");
  };
  switch (d.layout) {
    case DatasetDesc::Layout::compact:
      if (d.compact.size() != bytes) corrupt("compact data of " + std::to_string(d.compact.size()) + " bytes");
      std::memcpy(out, d.compact.data(), size_t(bytes));
      return;
    case DatasetDesc::Layout::contiguous: {
      if (d.pieces.size() != 1 || (d.pieces[0].addr != DatasetDesc::kUnallocated && d.pieces[0].size != bytes))
        corrupt("contiguous storage of another size than its shape");
      if (d.pieces[0].addr == DatasetDesc::kUnallocated) {
        for (uint64_t i = 0; i < bytes; i += d.elem)
          if (d.fill.empty()) std::memset(out + i, 0, d.elem);
          else std::memcpy(out + i, d.fill.data(), d.elem);
        return;
      }
      if (std::string why = pread_all(f.file->fd(), d.pieces[0].addr, bytes, out); !why.empty()) corrupt(why);
      return;
    }
    case DatasetDesc::Layout::chunked:
      for_each_chunk(f, d, where, read_chunk, out);
      return;
  }
}

void verify_dataset_bytes(const DescribedFile& f, const DatasetDesc& d, const std::string& where) {
  // Unchunked data carries no checksum and takes no decoding: nothing to verify.
  if (d.layout == DatasetDesc::Layout::chunked && !d.pipeline.empty())
    for_each_chunk(f, d, where, checksummed(d) ? verify_chunk : read_chunk, nullptr);
}

}  // namespace tqref::h5
