#include "io/hdf5_validate.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <vector>

#include "io/hdf5_description.h"
#include "io/hdf5_util.h"
#include "io/input_file.h"
#include "io/isolated_call.h"
#include "io/memory_budget.h"
#include "io/text_escape.h"

// The child opens the file itself; when this process has the same file open already, libhdf5
// shares that file's descriptor with the child's handle. HDF5's default sec2 driver reads with
// pread, which leaves the file offset shared with the parent alone.
#ifndef H5_HAVE_PREADWRITE
#error "libhdf5 without pread (H5_HAVE_PREADWRITE): the isolated validating pass is unsafe"
#endif

namespace tqref::h5 {

namespace {

constexpr int kMaxDepth = 64;                          // group nesting
constexpr uint64_t kMaxObjects = 1000000;              // objects per file
constexpr uint64_t kMaxChunkBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxChunks = uint64_t(1) << 22;     // chunks per file (a 20 GB file of 1 MiB chunks: 20000)
constexpr uint64_t kMaxCompactBytes = 65536;           // the most an object header can hold
constexpr hssize_t kMaxAttrElements = 1 << 20;

std::atomic<bool> g_in_process{false};
std::atomic<double> g_idle_timeout_s{kIdleTimeoutS};

// Paths for messages only (objects are opened by name from their parent): names from the file are
// shown through printable().
std::string join(const std::string& parent, const std::string& name) {
  return (parent == "/" ? "/" : parent + "/") + printable(name);
}

using Note = std::function<void(const std::string&)>;

// One pass over the structure (links, object headers, attributes with their values, datasets'
// types, shapes, storage and chunk indexes) that builds the description tqref's process reads.
// No data is read: the pass costs O(metadata), whatever the file's size.
class Walker {
 public:
  // `base`: where the HDF5 data starts in the file (after a user block); the addresses libhdf5
  // reports are relative to it, the description's are file offsets.
  Walker(const Note& note, uint64_t file_size, uint64_t base, uint64_t max_value_bytes)
      : note_(note), file_size_(file_size), base_(base), max_value_bytes_(max_value_bytes) {}
  // Each returns false after recording the first problem ("<object>: <why>") in problem_.
  bool root(hid_t file);
  std::string problem_;
  FileDescription desc_;

 private:
  bool fail(const std::string& obj, const std::string& why) {
    if (problem_.empty()) problem_ = obj + ": " + why;
    return false;
  }
  bool group(hid_t g, const std::string& path, int depth, uint32_t self);
  bool links(hid_t g, const std::string& path, H5_index_t index, std::vector<std::string>* names);
  bool object(hid_t parent, const std::string& name, const std::string& path, int depth, uint32_t* index);
  bool attributes(hid_t obj, const std::string& path, uint32_t self);
  bool dataset(hid_t d, const std::string& path, DatasetDesc& out);
  bool storage(hid_t d, const std::string& path, DatasetDesc& out);
  bool pieces(hid_t d, const std::string& path, DatasetDesc& out);
  bool chunk_at(hid_t d, const std::vector<hsize_t>& at, uint64_t chunk_bytes, const std::string& path,
                DatasetDesc::Piece* piece);
  bool attribute_value(hid_t a, hid_t type, hid_t space, const std::string& where, AttrDesc& out);
  friend herr_t on_attribute(hid_t, const char*, const H5A_info_t*, void*);

  const Note& note_;
  const uint64_t file_size_, base_, max_value_bytes_;
  uint64_t value_bytes_ = 0, chunks_ = 0;
  std::map<haddr_t, uint32_t> index_;  // object header address -> object: each object once (hard links may alias)
};

// --- links -------------------------------------------------------------------------------------

struct LinkScan {
  const std::string* path;
  std::vector<std::string>* names;
  std::string bad;  // "<link>: is ..." for the first link that is not a hard link
};

herr_t on_link(hid_t, const char* name, const H5L_info_t* info, void* data) {
  auto* s = static_cast<LinkScan*>(data);
  const char* kind = info->type == H5L_TYPE_HARD       ? nullptr
                     : info->type == H5L_TYPE_SOFT     ? "a soft link"
                     : info->type == H5L_TYPE_EXTERNAL ? "an external link (into another file)"
                                                       : "a user-defined link";
  if (kind) {
    s->bad = join(*s->path, name) + ": is " + kind + "; allowed: objects stored in this file (hard links)";
    return -1;
  }
  s->names->push_back(name);
  return 0;
}

bool Walker::links(hid_t g, const std::string& path, H5_index_t index, std::vector<std::string>* names) {
  LinkScan scan{&path, names, ""};
  hsize_t at = 0;
  if (H5Literate(g, index, H5_ITER_INC, &at, on_link, &scan) >= 0) return true;
  if (!scan.bad.empty()) {
    problem_ = scan.bad;
    return false;
  }
  return fail(path, "corrupt file: the group's links cannot be listed");
}

// Both link indexes the readers used to consult: by name and, where the group keeps one, by
// creation order (the order the description lists the links in, as Node::children lists them).
bool Walker::group(hid_t g, const std::string& path, int depth, uint32_t self) {
  if (depth > kMaxDepth) return fail(path, "groups nested deeper than " + std::to_string(kMaxDepth));
  std::vector<std::string> names, by_order;
  if (!links(g, path, H5_INDEX_NAME, &names)) return false;
  Handle gcpl(H5Gget_create_plist(g), H5Pclose);
  unsigned flags = 0;
  if (!gcpl || H5Pget_link_creation_order(gcpl.get(), &flags) < 0)
    return fail(path, "corrupt file: unreadable group properties");
  if (flags & H5P_CRT_ORDER_INDEXED) {
    if (!links(g, path, H5_INDEX_CRT_ORDER, &by_order)) return false;
    std::vector<std::string> sorted = by_order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::string> named = names;
    std::sort(named.begin(), named.end());
    if (sorted != named) return fail(path, "corrupt file: the group's name and creation-order indexes differ");
  }
  std::map<std::string, uint32_t> targets;
  for (const std::string& n : names) {
    uint32_t target = 0;
    if (!object(g, n, join(path, n), depth + 1, &target)) return false;
    targets[n] = target;
  }
  auto& out = desc_.objects[self].links;
  for (const std::string& n : (flags & H5P_CRT_ORDER_INDEXED) ? by_order : names) out.emplace_back(n, targets[n]);
  return true;
}

bool Walker::object(hid_t parent, const std::string& name, const std::string& path, int depth, uint32_t* index) {
  note_(path);
  H5O_info_t info;
  if (H5Oget_info_by_name2(parent, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
    return fail(path, "corrupt file: unreadable object header");
  if (const auto seen = index_.find(info.addr); seen != index_.end()) {
    *index = seen->second;
    return true;
  }
  if (index_.size() >= kMaxObjects) return fail(path, "more than " + std::to_string(kMaxObjects) + " objects in the file");
  *index = uint32_t(desc_.objects.size());
  index_[info.addr] = *index;
  desc_.objects.emplace_back();
  Handle o(H5Oopen(parent, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o) return fail(path, "corrupt file: the object cannot be opened");
  if (!attributes(o.get(), path, *index)) return false;
  if (info.type == H5O_TYPE_GROUP) {
    desc_.objects[*index].kind = ObjectDesc::Kind::group;
    return group(o.get(), path, depth, *index);
  }
  if (info.type == H5O_TYPE_DATASET) {
    desc_.objects[*index].kind = ObjectDesc::Kind::dataset;
    DatasetDesc d;
    if (!dataset(o.get(), path, d)) return false;
    desc_.objects[*index].data = std::move(d);
  }
  return true;  // a named datatype: its header is read, it holds no data
}

// --- attributes --------------------------------------------------------------------------------

struct AttrScan {
  Walker* w;
  const std::string* path;
  uint32_t self;
};

herr_t on_attribute(hid_t obj, const char* name, const H5A_info_t*, void* data) {
  auto* s = static_cast<AttrScan*>(data);
  Walker& w = *s->w;
  const std::string where = *s->path + " attribute '" + printable(name) + "'";
  w.note_(where);
  Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  Handle type(a ? H5Aget_type(a.get()) : H5I_INVALID_HID, H5Tclose);
  Handle space(a ? H5Aget_space(a.get()) : H5I_INVALID_HID, H5Sclose);
  AttrDesc desc;
  desc.name = name;
  if (!a) return w.fail(where, "corrupt file: the attribute cannot be opened"), -1;
  if (!type || !space) return w.fail(where, "corrupt file: unreadable type or dataspace"), -1;
  if (!w.attribute_value(a.get(), type.get(), space.get(), where, desc)) return -1;
  w.desc_.objects[s->self].attrs.push_back(std::move(desc));
  return 0;
}

bool Walker::attributes(hid_t obj, const std::string& path, uint32_t self) {
  AttrScan scan{this, &path, self};
  hsize_t at = 0;
  if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &at, on_attribute, &scan) >= 0) return true;
  return fail(path, "corrupt file: the attributes cannot be listed");
}

// Reads the value of every integer, float and string attribute as the readers read it
// (hdf5_util.cpp): numbers converted to int64/uint64 and to double, fixed strings as stored up to
// their first NUL, variable-length strings through the global heap (where libhdf5 1.10 trusts
// stored lengths: fuzz findings 4 and 5). Attributes of other classes are never read by tqref;
// their headers are checked and their class recorded. All values of a file together are at most
// max_value_bytes_ (a corrupt global heap can make every string of an array the same large one).
bool Walker::attribute_value(hid_t a, hid_t type, hid_t space, const std::string& where, AttrDesc& out) {
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  const int rank = H5Sget_simple_extent_ndims(space);
  if (n < 0 || rank < 0) return fail(where, "corrupt file: unreadable type or dataspace");
  if (n > kMaxAttrElements)
    return fail(where, std::to_string(n) + " elements; allowed: at most " + std::to_string(kMaxAttrElements));
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  out.rank = rank, out.count = uint64_t(n);
  out.cls = cls == H5T_INTEGER ? ValueClass::integer
            : cls == H5T_FLOAT ? ValueClass::floating
            : cls == H5T_STRING ? ValueClass::string
                                : ValueClass::other;
  if (n == 0 || out.cls == ValueClass::other) return true;
  bool ok = true;
  uint64_t bytes = 0;
  if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
    if (const std::string why = number_type_problem(type); !why.empty()) return fail(where, "corrupt file: " + why);
    out.reals.resize(size_t(n));
    ok = H5Aread(a, H5T_NATIVE_DOUBLE, out.reals.data()) >= 0;
    if (ok && cls == H5T_INTEGER) {  // attr_int reads integers so
      const hid_t rt = integer_read_type(type);
      out.uint64 = rt == H5T_NATIVE_UINT64;
      out.ints.resize(size_t(n));
      ok = H5Aread(a, rt, out.ints.data()) >= 0;
    }
    bytes = uint64_t(n) * 16;
  } else if (H5Tis_variable_str(type) > 0) {
    Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt.get(), H5T_VARIABLE);
    H5Tset_cset(mt.get(), H5Tget_cset(type));  // HDF5 does not convert ASCII <-> UTF-8
    std::vector<char*> v(static_cast<size_t>(n), nullptr);
    ok = H5Aread(a, mt.get(), v.data()) >= 0;
    for (size_t i = 0; ok && i < v.size(); ++i) {
      const size_t len = v[i] ? ::strnlen(v[i], kMaxStringBytes + 1) : 0;
      if (len > kMaxStringBytes || (bytes += len) > max_value_bytes_) {
        H5Dvlen_reclaim(mt.get(), space, H5P_DEFAULT, v.data());
        return fail(where, len > kMaxStringBytes ? "a string above 2^24 bytes; allowed: up to 16 MiB"
                                                 : "corrupt file: attribute values larger than the file can hold");
      }
      out.strings.emplace_back(v[i] ? v[i] : "", len);
    }
    if (ok) H5Dvlen_reclaim(mt.get(), space, H5P_DEFAULT, v.data());
  } else {
    if (size == 0 || uint64_t(size) * uint64_t(n) > kMaxStringBytes)
      return fail(where, "string of " + std::to_string(size) + " bytes x " + std::to_string(n) +
                         "; allowed: up to 16 MiB");
    std::vector<char> v(size * size_t(n));
    ok = H5Aread(a, type, v.data()) >= 0;
    for (size_t i = 0; ok && i < size_t(n); ++i) out.strings.emplace_back(v.data() + i * size, ::strnlen(v.data() + i * size, size));
    bytes = v.size();
  }
  if (!ok) return fail(where, "corrupt file: the value cannot be read");
  if ((value_bytes_ += bytes) > max_value_bytes_) return fail(where, "corrupt file: attribute values larger than the file can hold");
  return true;
}

// --- datasets ----------------------------------------------------------------------------------

// Creation properties: where the data lives and how it is encoded, into `out` (layout, filters,
// chunk shape, fill value).
bool Walker::storage(hid_t d, const std::string& path, DatasetDesc& out) {
  Handle dcpl(H5Dget_create_plist(d), H5Pclose);
  if (!dcpl) return fail(path, "corrupt file: unreadable creation properties");
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  if (layout == H5D_VIRTUAL)
    return fail(path, "is a virtual dataset (its data is mapped from other datasets or files); allowed: data "
                      "stored in this file");
  if (layout != H5D_COMPACT && layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED)
    return fail(path, "corrupt file: unknown storage layout");
  const int external = H5Pget_external_count(dcpl.get());
  if (external != 0)
    return fail(path, "stores its data in " + std::to_string(external) + " external file(s); allowed: data "
                      "stored in this file");
  const int filters = H5Pget_nfilters(dcpl.get());
  if (filters < 0) return fail(path, "corrupt file: unreadable filter pipeline");
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0, cd[8] = {};
    size_t n_values = 8;
    char name[80] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), unsigned(i), &flags, &n_values, cd, sizeof name, name, &config);
    if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32)
      return fail(path, "uses filter " + std::to_string(id) + " ('" + printable(name) +
                        "'); allowed: deflate (1), shuffle (2), fletcher32 (3)");
    out.pipeline.push_back({uint16_t(id), id == H5Z_FILTER_SHUFFLE && n_values > 0 ? cd[0] : 0});
  }
  H5D_fill_value_t fill = H5D_FILL_VALUE_DEFAULT;
  if (H5Pfill_value_defined(dcpl.get(), &fill) < 0) return fail(path, "corrupt file: unreadable fill value");
  if (fill == H5D_FILL_VALUE_USER_DEFINED && out.elem <= 8) {  // larger types are never read
    Handle type(H5Dget_type(d), H5Tclose);
    out.fill.resize(out.elem);
    if (!type || H5Pget_fill_value(dcpl.get(), type.get(), out.fill.data()) < 0)
      return fail(path, "corrupt file: unreadable fill value");
  }
  out.layout = layout == H5D_CHUNKED ? DatasetDesc::Layout::chunked
               : layout == H5D_COMPACT ? DatasetDesc::Layout::compact
                                       : DatasetDesc::Layout::contiguous;
  if (layout != H5D_CHUNKED) return true;
  const int rank = H5Pget_chunk(dcpl.get(), 0, nullptr);
  if (rank <= 0 || size_t(rank) != out.dims.size()) return fail(path, "corrupt file: unreadable chunk shape");
  std::vector<hsize_t> chunk(static_cast<size_t>(rank));
  H5Pget_chunk(dcpl.get(), rank, chunk.data());
  uint64_t bytes = out.elem;
  for (hsize_t c : chunk)
    if (c == 0 || __builtin_mul_overflow(bytes, uint64_t(c), &bytes) || bytes > kMaxChunkBytes)
      return fail(path, "chunks above " + std::to_string(kMaxChunkBytes >> 20) + " MiB; allowed: up to 64 MiB");
  out.chunk.assign(chunk.begin(), chunk.end());
  unsigned opts = 0;
  if (H5Pget_chunk_opts(dcpl.get(), &opts) < 0) return fail(path, "corrupt file: unreadable chunk options");
  out.filter_edges = !(opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS);
  return true;
}

bool Walker::dataset(hid_t d, const std::string& path, DatasetDesc& out) {
  Handle type(H5Dget_type(d), H5Tclose), space(H5Dget_space(d), H5Sclose);
  if (!type || !space) return fail(path, "corrupt file: unreadable type or dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) return fail(path, "corrupt file: unreadable dataspace");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  out.dims.assign(dims.begin(), dims.end());
  const H5T_class_t cls = H5Tget_class(type.get());
  const size_t elem = H5Tget_size(type.get());
  if (elem == 0) return fail(path, "corrupt file: element size 0");
  out.elem = uint32_t(std::min<size_t>(elem, UINT32_MAX));
  if (!storage(d, path, out)) return false;
  // Only the classes tqref reads (readers check dtypes exactly): other datasets are never read.
  if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || elem > 8) return true;
  if (const std::string why = number_type_problem(type.get()); !why.empty()) return fail(path, "corrupt file: " + why);
  out.stored = H5Dget_storage_size(d);
  if (const std::string why = dataset_size_problem(out.dims, elem, out.stored); !why.empty()) return fail(path, why);
  out.is_signed = cls == H5T_FLOAT || H5Tget_sign(type.get()) == H5T_SGN_2;
  out.big_endian = H5Tget_order(type.get()) == H5T_ORDER_BE;
  if (!pieces(d, path, out)) return false;
  out.cls = cls == H5T_INTEGER ? ValueClass::integer : ValueClass::floating;  // last: a complete description
  return true;
}

// The stored form of the chunk at `at`, from the chunk index: inside the file, and not larger
// than the chunk itself (max_stored_chunk): a wild size in a damaged index is refused here.
bool Walker::chunk_at(hid_t d, const std::vector<hsize_t>& at, uint64_t chunk_bytes, const std::string& path,
                      DatasetDesc::Piece* piece) {
  unsigned mask = 0;
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  if (H5Dget_chunk_info_by_coord(d, at.data(), &mask, &addr, &size) < 0)
    return fail(path, "corrupt file: the chunk index cannot be read");
  if (addr == HADDR_UNDEF) return true;  // not allocated: reads as the fill value
  const uint64_t at_file = add_sat(addr, base_);
  if (size > max_stored_chunk(chunk_bytes) || at_file > file_size_ || size > file_size_ - at_file)
    return fail(path, "corrupt file: a chunk stores " + std::to_string(size) + " bytes at offset " +
                          std::to_string(at_file) + " for " + std::to_string(chunk_bytes) + " bytes of data in a file of " +
                          std::to_string(file_size_) + " bytes");
  *piece = {at_file, size, mask};
  return true;
}

// Where the data lies: each chunk of the grid (row-major), the one extent of a contiguous
// dataset, or the bytes of a compact one (read here: they are part of the object header).
bool Walker::pieces(hid_t d, const std::string& path, DatasetDesc& out) {
  uint64_t count = 1;
  for (uint64_t x : out.dims) count *= x;  // fits: dataset_size_problem
  if (count == 0) return true;
  if (out.layout == DatasetDesc::Layout::compact) {
    if (count * out.elem > kMaxCompactBytes) return fail(path, "corrupt file: compact data above 64 KiB");
    Handle type(H5Dget_type(d), H5Tclose);
    out.compact.resize(size_t(count * out.elem));
    if (!type || H5Dread(d, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.compact.data()) < 0)
      return fail(path, "corrupt file: the data cannot be read (damaged compact storage)");
    return true;
  }
  if (out.layout == DatasetDesc::Layout::contiguous) {
    const haddr_t addr = H5Dget_offset(d);
    const uint64_t size = count * out.elem, at_file = addr == HADDR_UNDEF ? DatasetDesc::kUnallocated : add_sat(addr, base_);
    if (addr != HADDR_UNDEF && (at_file > file_size_ || size > file_size_ - at_file))
      return fail(path, "corrupt file: its " + std::to_string(size) + " bytes at offset " + std::to_string(at_file) +
                            " lie outside the file of " + std::to_string(file_size_) + " bytes");
    out.pieces.push_back({at_file, size, 0});
    return true;
  }
  uint64_t chunk_bytes = out.elem, grid = 1;
  for (size_t i = 0; i < out.dims.size(); ++i) {
    chunk_bytes *= out.chunk[i];
    grid *= (out.dims[i] + out.chunk[i] - 1) / out.chunk[i];  // at most count
  }
  if ((chunks_ += grid) > kMaxChunks) return fail(path, "more than " + std::to_string(kMaxChunks) + " chunks in the file");
  std::vector<hsize_t> at(out.dims.size(), 0);
  out.pieces.resize(size_t(grid));
  for (DatasetDesc::Piece& piece : out.pieces) {
    if (!chunk_at(d, at, chunk_bytes, path, &piece)) return false;
    size_t i = at.size();
    while (i > 0 && (at[i - 1] += out.chunk[i - 1]) >= out.dims[i - 1]) at[--i] = 0;
  }
  return true;
}

// The walk from the root: its attributes, then every object under it.
bool Walker::root(hid_t file) {
  Handle root(H5Oopen(file, "/", H5P_DEFAULT), H5Oclose);
  if (!root) return fail("/", "corrupt file: the root group cannot be opened");
  note_("/");
  H5O_info_t info;
  if (H5Oget_info2(root.get(), &info, H5O_INFO_BASIC) < 0) return fail("/", "corrupt file: unreadable object header");
  index_[info.addr] = 0;
  desc_.objects.emplace_back();
  desc_.objects[0].kind = ObjectDesc::Kind::group;
  return attributes(root.get(), "/", 0) && group(root.get(), "/", 0, 0);
}

// In the child: open `path`, check that it is the file the parent checked (`expected`), walk it.
// `out` is "P<object>: <problem>" or "D<description>".
void walk_and_describe(const std::string& path, const FileIdentity& expected, uint64_t max_bytes, const Note& note,
                       std::string& out) {
  Handle f(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!f) {
    out = "P/: cannot open HDF5 file (truncated or corrupt metadata)";
    return;
  }
  void* handle = nullptr;
  FileIdentity opened;
  if (H5Fget_vfd_handle(f.get(), H5P_DEFAULT, &handle) < 0 || !identity_of_fd(*static_cast<int*>(handle), &opened) ||
      !(opened == expected)) {
    out = "P/: the file changed while it was being opened";
    return;
  }
  hsize_t size = 0, base = 0;
  Handle fcpl(H5Fget_create_plist(f.get()), H5Pclose);
  if (H5Fget_filesize(f.get(), &size) < 0 || !fcpl || H5Pget_userblock(fcpl.get(), &base) < 0) {
    out = "P/: cannot read the file size";
    return;
  }
  Walker w(note, size, base, max_bytes);
  if (!w.root(f.get())) {
    out = "P" + w.problem_;
    return;
  }
  out = "D" + serialize_description(w.desc_);
}

}  // namespace

void set_validation_in_process(bool in_process) { g_in_process = in_process; }
void set_validation_idle_timeout(double seconds) { g_idle_timeout_s = seconds; }

uint64_t description_limit(uint64_t file_size) {
  return std::min(add_sat(mul_sat(file_size, 16), uint64_t(128) << 20), memory_budget() / 2);
}

FileDescription describe_validated(const std::string& path, const FileIdentity& identity, uint64_t file_size) {
  const uint64_t limit = description_limit(file_size);
  std::string out;
  if (g_in_process) {
    walk_and_describe(path, identity, limit, [](const std::string&) {}, out);
  } else {
    IsolatedResult r = run_isolated(
        [&](std::string& o, const IsolatedNote& note) {
          walk_and_describe(path, identity, limit, note, o);
          return true;
        },
        // The walk holds the description and libhdf5's caches; the budget bounds what libhdf5
        // allocates inside a call (a wild size in damaged metadata).
        {g_idle_timeout_s, size_t(limit + 1), memory_budget() + (uint64_t(256) << 20)});
    if (r.status == IsolatedResult::Status::ok) {
      out = std::move(r.data);
    } else if (r.status == IsolatedResult::Status::too_large) {
      out = "P/: corrupt file: its description is larger than one of this file can be (allowed: at most " +
            std::to_string(limit) + " bytes, 16 times its size plus 128 MiB, within half the memory budget)";
    } else {
      const std::string obj = r.last_note.empty() ? "/" : r.last_note;
      out = "P" + obj + ": corrupt file: libhdf5 failed while reading this object (" + r.describe(g_idle_timeout_s) + ")";
    }
  }
  if (out.empty()) throw Error(path + ":/: the validating pass sent no result");
  if (out[0] != 'D') throw Error(path + ":" + out.substr(1));
  out.erase(0, 1);
  return parse_description(out, file_size, path);
}

}  // namespace tqref::h5
