// What the validating child tells tqref's process about an HDF5 file (docs/reliability.md,
// "Untrusted files"): every object the walk accepted, every attribute with its value as the
// readers read it, every number dataset's type, shape, layout, filters and where each of its chunks
// lies in the file (offset, stored size, filter mask). tqref's process reads the data itself
// (pread, chunk_decoder.h) and never lets libhdf5 decode the untrusted file's metadata.
//
// The description crosses a pipe from a child that may have been damaged by libhdf5 (it decodes
// the untrusted file), so parse_description trusts none of it: every count is checked against
// the bytes that remain, every index against what it indexes, every chunk against the file's
// size, and any inconsistency is a corrupt file.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/chunk_decoder.h"

namespace tqref::h5 {

enum class ValueClass : uint8_t { integer = 0, floating = 1, string = 2, other = 3 };

struct AttrDesc {
  std::string name;
  ValueClass cls = ValueClass::other;
  bool uint64 = false;  // integers: an 8-byte unsigned type (read as uint64, not int64)
  int32_t rank = 0;
  uint64_t count = 0;                // elements
  std::vector<uint64_t> ints;        // integers: each as read (int64 or uint64 bits)
  std::vector<double> reals;         // integers and floats: each converted to double by libhdf5
  std::vector<std::string> strings;  // strings: each as read, up to its first NUL
};

// A dataset of a number type (other classes carry their class only: readers refuse them).
struct DatasetDesc {
  ValueClass cls = ValueClass::other;
  uint32_t elem = 0;  // bytes per element
  bool is_signed = false, big_endian = false;
  std::vector<uint64_t> dims;
  uint64_t stored = 0;  // H5Dget_storage_size: the bytes the file holds for it
  enum class Layout : uint8_t { contiguous = 0, chunked = 1, compact = 2 } layout = Layout::contiguous;
  std::vector<FilterStep> pipeline;
  std::vector<uint64_t> chunk;   // chunked: the chunk's extent per dimension
  bool filter_edges = true;      // chunked: partial edge chunks filtered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS off)
  std::vector<uint8_t> fill;     // one element in file byte order: what unallocated storage reads as
  struct Piece {
    uint64_t addr = kUnallocated, size = 0;
    uint32_t mask = 0;
  };
  static constexpr uint64_t kUnallocated = UINT64_MAX;
  // chunked: one per chunk of the grid, row-major; contiguous: one (the whole dataset).
  std::vector<Piece> pieces;
  std::vector<uint8_t> compact;  // compact: the data, stored in the object header
};

struct ObjectDesc {
  enum class Kind : uint8_t { group = 0, dataset = 1, other = 2 } kind = Kind::other;
  std::vector<AttrDesc> attrs;  // by name (H5_INDEX_NAME order)
  // groups: the links in the readers' order (creation order where indexed, else by name), each to
  // an object of the description (hard links may alias one object)
  std::vector<std::pair<std::string, uint32_t>> links;
  std::map<std::string, uint32_t> by_name;  // filled by parse_description
  DatasetDesc data;
};

// objects[0] is the root group.
struct FileDescription {
  std::vector<ObjectDesc> objects;
};

// The most a chunk of `chunk_bytes` may take in the file: deflate adds a few bytes per 16 KiB,
// fletcher32 four. tqref's process allocates the stored size before it reads it.
inline uint64_t max_stored_chunk(uint64_t chunk_bytes) { return chunk_bytes + chunk_bytes / 64 + 1024; }

std::string serialize_description(const FileDescription& d);
// Throws h5::Error "<path>:/: corrupt file: ..." for anything inconsistent (see above), pieces
// outside a file of `file_size` bytes included.
FileDescription parse_description(const std::string& bytes, uint64_t file_size, const std::string& path);

}  // namespace tqref::h5
