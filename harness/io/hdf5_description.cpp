#include "io/hdf5_description.h"

#include <cstring>

#include "io/hdf5_util.h"
#include "io/text_escape.h"

namespace tqref::h5 {

namespace {

// Limits of a description that the walk cannot exceed (hdf5_validate.cpp): ranks of HDF5
// dataspaces, and a filter pipeline of the three filters tqref accepts.
constexpr uint64_t kMaxRank = 32, kMaxPipeline = 32, kMaxChunkBytes = uint64_t(64) << 20;

// --- writing (in the child) --------------------------------------------------------------------

struct Out {
  std::string s;
  void u8(uint8_t v) { s.push_back(char(v)); }
  void u32(uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
  void u64(uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
  void f64(double v) { s.append(reinterpret_cast<const char*>(&v), 8); }
  void str(const std::string& v) { u64(v.size()), s.append(v); }
  void bytes(const std::vector<uint8_t>& v) { u64(v.size()), s.append(v.begin(), v.end()); }
  void u64s(const std::vector<uint64_t>& v) {
    u64(v.size());
    for (uint64_t x : v) u64(x);
  }
};

void put_attr(Out& o, const AttrDesc& a) {
  o.str(a.name);
  o.u8(uint8_t(a.cls));
  o.u8(a.uint64);
  o.u32(uint32_t(a.rank));
  o.u64(a.count);
  o.u64s(a.ints);
  o.u64(a.reals.size());
  for (double x : a.reals) o.f64(x);
  o.u64(a.strings.size());
  for (const std::string& x : a.strings) o.str(x);
}

void put_dataset(Out& o, const DatasetDesc& d) {
  o.u8(uint8_t(d.cls));
  o.u32(d.elem);
  o.u8(d.is_signed);
  o.u8(d.big_endian);
  o.u64s(d.dims);
  o.u64(d.stored);
  o.u8(uint8_t(d.layout));
  o.u64(d.pipeline.size());
  for (const FilterStep& f : d.pipeline) o.u32(f.id), o.u32(f.shuffle_size);
  o.u64s(d.chunk);
  o.u8(d.filter_edges);
  o.bytes(d.fill);
  o.u64(d.pieces.size());
  for (const DatasetDesc::Piece& p : d.pieces) o.u64(p.addr), o.u64(p.size), o.u32(p.mask);
  o.bytes(d.compact);
}

// --- reading (in tqref's process) --------------------------------------------------------------

// A cursor over the child's bytes: every read is bounds-checked, every count is checked against
// the bytes left before anything is allocated for it.
class In {
 public:
  In(const std::string& s, const std::string& path) : s_(s), path_(path) {}
  [[noreturn]] void bad(const std::string& why) const {
    throw Error(printable(path_) + ":/: corrupt file: the validating pass sent an inconsistent description (" + why +
                ")");
  }
  void raw(void* dst, size_t n) {
    if (n > s_.size() - at_) bad("truncated");
    std::memcpy(dst, s_.data() + at_, n);
    at_ += n;
  }
  uint8_t u8() {
    uint8_t v;
    raw(&v, 1);
    return v;
  }
  uint32_t u32() {
    uint32_t v;
    raw(&v, 4);
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    raw(&v, 8);
    return v;
  }
  double f64() {
    double v;
    raw(&v, 8);
    return v;
  }
  // A count of items of at least `each` bytes that must still be there.
  uint64_t count(uint64_t each) {
    const uint64_t n = u64();
    if (n > (s_.size() - at_) / each) bad("a count of " + std::to_string(n) + " past the end");
    return n;
  }
  std::string str() {
    const uint64_t n = count(1);
    std::string v = s_.substr(at_, size_t(n));
    at_ += n;
    return v;
  }
  std::vector<uint8_t> bytes() {
    const uint64_t n = count(1);
    std::vector<uint8_t> v(s_.begin() + long(at_), s_.begin() + long(at_ + n));
    at_ += n;
    return v;
  }
  std::vector<uint64_t> u64s() {
    std::vector<uint64_t> v(size_t(count(8)));
    for (uint64_t& x : v) x = u64();
    return v;
  }
  bool done() const { return at_ == s_.size(); }

 private:
  const std::string& s_;
  const std::string& path_;
  size_t at_ = 0;
};

AttrDesc get_attr(In& in) {
  AttrDesc a;
  a.name = in.str();
  const uint8_t cls = in.u8();
  if (cls > uint8_t(ValueClass::other)) in.bad("attribute class");
  a.cls = ValueClass(cls);
  a.uint64 = in.u8() != 0;
  a.rank = int32_t(in.u32());
  a.count = in.u64();
  a.ints = in.u64s();
  a.reals.resize(size_t(in.count(8)));
  for (double& x : a.reals) x = in.f64();
  a.strings.resize(size_t(in.count(8)));
  for (std::string& x : a.strings) x = in.str();
  const bool number = a.cls == ValueClass::integer || a.cls == ValueClass::floating;
  if (a.rank < 0 || uint64_t(a.rank) > kMaxRank || (a.cls == ValueClass::integer && a.ints.size() != a.count) ||
      (number && a.reals.size() != a.count) || (a.cls == ValueClass::string && a.strings.size() != a.count))
    in.bad("attribute '" + printable(a.name) + "'");
  return a;
}

// The number of chunks in the grid of `d`, or UINT64_MAX past 2^40.
uint64_t grid_chunks(const DatasetDesc& d) {
  uint64_t n = 1;
  for (size_t i = 0; i < d.dims.size(); ++i) {
    const uint64_t per = d.chunk[i] ? (d.dims[i] + d.chunk[i] - 1) / d.chunk[i] : UINT64_MAX;
    if (__builtin_mul_overflow(n, per, &n) || n > (uint64_t(1) << 40)) return UINT64_MAX;
  }
  return n;
}

void check_dataset(In& in, const DatasetDesc& d, uint64_t file_size) {
  if (d.dims.size() > kMaxRank || d.elem == 0 || d.elem > 8 || d.pipeline.size() > kMaxPipeline) in.bad("dataset type");
  if (d.fill.size() != 0 && d.fill.size() != d.elem) in.bad("fill value");
  for (const FilterStep& f : d.pipeline)
    if (f.id != kFilterDeflate && f.id != kFilterShuffle && f.id != kFilterFletcher32) in.bad("filter");
  if (d.layout == DatasetDesc::Layout::chunked) {
    if (d.chunk.size() != d.dims.size() || grid_chunks(d) != d.pieces.size()) in.bad("chunk grid");
    uint64_t chunk_bytes = d.elem;
    for (uint64_t c : d.chunk)
      if (__builtin_mul_overflow(chunk_bytes, c, &chunk_bytes) || chunk_bytes > kMaxChunkBytes) in.bad("chunk size");
    for (const DatasetDesc::Piece& p : d.pieces)
      if (p.addr != DatasetDesc::kUnallocated && p.size > max_stored_chunk(chunk_bytes)) in.bad("a chunk's stored size");
  } else if (!d.pipeline.empty() || d.pieces.size() > 1) {
    in.bad("filters or pieces of an unchunked dataset");
  }
  for (const DatasetDesc::Piece& p : d.pieces)
    if (p.addr != DatasetDesc::kUnallocated && (p.addr > file_size || p.size > file_size - p.addr))
      in.bad("a chunk of " + std::to_string(p.size) + " bytes at offset " + std::to_string(p.addr) +
             " outside the file of " + std::to_string(file_size) + " bytes");
}

DatasetDesc get_dataset(In& in, uint64_t file_size) {
  DatasetDesc d;
  const uint8_t cls = in.u8();
  if (cls > uint8_t(ValueClass::other)) in.bad("dataset class");
  d.cls = ValueClass(cls);
  d.elem = in.u32();
  d.is_signed = in.u8() != 0;
  d.big_endian = in.u8() != 0;
  d.dims = in.u64s();
  d.stored = in.u64();
  const uint8_t layout = in.u8();
  if (layout > uint8_t(DatasetDesc::Layout::compact)) in.bad("layout");
  d.layout = DatasetDesc::Layout(layout);
  d.pipeline.resize(size_t(in.count(8)));
  for (FilterStep& f : d.pipeline) f.id = uint16_t(in.u32()), f.shuffle_size = in.u32();
  d.chunk = in.u64s();
  d.filter_edges = in.u8() != 0;
  d.fill = in.bytes();
  d.pieces.resize(size_t(in.count(20)));
  for (DatasetDesc::Piece& p : d.pieces) p.addr = in.u64(), p.size = in.u64(), p.mask = in.u32();
  d.compact = in.bytes();
  if (d.cls == ValueClass::integer || d.cls == ValueClass::floating) check_dataset(in, d, file_size);
  return d;
}

}  // namespace

std::string serialize_description(const FileDescription& d) {
  Out o;
  o.u64(d.objects.size());
  for (const ObjectDesc& obj : d.objects) {
    o.u8(uint8_t(obj.kind));
    o.u64(obj.attrs.size());
    for (const AttrDesc& a : obj.attrs) put_attr(o, a);
    o.u64(obj.links.size());
    for (const auto& [name, target] : obj.links) o.str(name), o.u32(target);
    if (obj.kind == ObjectDesc::Kind::dataset) put_dataset(o, obj.data);
  }
  return std::move(o.s);
}

FileDescription parse_description(const std::string& bytes, uint64_t file_size, const std::string& path) {
  In in(bytes, path);
  FileDescription d;
  d.objects.resize(size_t(in.count(17)));
  if (d.objects.empty()) in.bad("no root group");
  for (ObjectDesc& obj : d.objects) {
    const uint8_t kind = in.u8();
    if (kind > uint8_t(ObjectDesc::Kind::other)) in.bad("object kind");
    obj.kind = ObjectDesc::Kind(kind);
    obj.attrs.resize(size_t(in.count(40)));
    for (AttrDesc& a : obj.attrs) a = get_attr(in);
    obj.links.resize(size_t(in.count(12)));
    for (auto& [name, target] : obj.links) {
      name = in.str();
      target = in.u32();
      if (target >= d.objects.size() || !obj.by_name.emplace(name, target).second) in.bad("link '" + printable(name) + "'");
    }
    if (obj.kind == ObjectDesc::Kind::dataset) obj.data = get_dataset(in, file_size);
  }
  if (d.objects[0].kind != ObjectDesc::Kind::group) in.bad("the root is not a group");
  if (!in.done()) in.bad("trailing bytes");
  return d;
}

}  // namespace tqref::h5
