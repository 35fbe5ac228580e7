#include "io/hdf5_validate.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <vector>

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
constexpr uint64_t kSlabBytes = uint64_t(16) << 20;    // data read per H5Dread
constexpr uint64_t kMaxChunkBytes = uint64_t(64) << 20;
constexpr hssize_t kMaxAttrElements = 1 << 20;

std::atomic<bool> g_in_process{false};
std::atomic<double> g_idle_timeout_s{kIdleTimeoutS};

// Paths for messages only (objects are opened by name from their parent): names from the file are
// shown through printable().
std::string join(const std::string& parent, const std::string& name) {
  return (parent == "/" ? "/" : parent + "/") + printable(name);
}

using Note = std::function<void(const std::string&)>;

// A dataset whose data the second phase reads: the raw link names from the root (the walk
// opens objects by name from their parent, so does the data phase), and its slabs.
struct DataJob {
  std::vector<std::string> names;
  std::string path;  // for messages
  std::vector<hsize_t> dims, block;
  size_t elem = 0;
  uint64_t chunk_bytes = 0;  // whole chunks per slab: their index entries are checked
};

// Two phases: structure (links, object headers, attributes, datasets' types, shapes and storage;
// cheap) and data (every byte of every dataset tqref reads; the costly part: a small file can
// declare gigabytes of zeros). Between them a reader may check the attributes (open_validated).
class Walker {
 public:
  Walker(const Note& note, uint64_t file_size) : note_(note), file_size_(file_size) {}
  // Each returns false after recording the first problem ("<object>: <why>") in problem_.
  bool group(hid_t g, const std::string& path, int depth);
  bool attributes(hid_t obj, const std::string& path);
  bool data(hid_t file);  // the data phase, after group() from the root
  bool fail_at(const std::string& obj, const std::string& why) { return fail(obj, why); }
  std::string problem_;

 private:
  bool fail(const std::string& obj, const std::string& why) {
    if (problem_.empty()) problem_ = obj + ": " + why;
    return false;
  }
  bool links(hid_t g, const std::string& path, H5_index_t index, std::vector<std::string>* names);
  bool object(hid_t parent, const std::string& name, const std::string& path, int depth);
  bool attribute(hid_t obj, const char* name, const std::string& path);
  bool dataset(hid_t d, const std::string& path);
  bool storage(hid_t d, const std::string& path, size_t elem, std::vector<hsize_t>* chunk);
  bool slabs(hid_t d, const DataJob& job);
  bool chunk_stored(hid_t d, const std::vector<hsize_t>& at, uint64_t chunk_bytes, const std::string& path);

  const Note& note_;
  const uint64_t file_size_;
  std::set<haddr_t> seen_;         // object header addresses: each object once (hard links may alias)
  std::vector<std::string> trail_; // raw link names from the root to the object being walked
  std::vector<DataJob> jobs_;      // the data phase's datasets, in walk order
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

// Both link indexes the readers use: by name (H5Lexists, H5Gopen) and, where the group keeps
// one, by creation order (Node::children).
bool Walker::group(hid_t g, const std::string& path, int depth) {
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
  for (const std::string& n : names)
    if (!object(g, n, join(path, n), depth + 1)) return false;
  return true;
}

bool Walker::object(hid_t parent, const std::string& name, const std::string& path, int depth) {
  note_(path);
  H5O_info_t info;
  if (H5Oget_info_by_name2(parent, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
    return fail(path, "corrupt file: unreadable object header");
  if (!seen_.insert(info.addr).second) return true;
  if (seen_.size() > kMaxObjects) return fail(path, "more than " + std::to_string(kMaxObjects) + " objects in the file");
  Handle o(H5Oopen(parent, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!o) return fail(path, "corrupt file: the object cannot be opened");
  if (!attributes(o.get(), path)) return false;
  trail_.push_back(name);
  const bool ok = info.type == H5O_TYPE_GROUP     ? group(o.get(), path, depth)
                  : info.type == H5O_TYPE_DATASET ? dataset(o.get(), path)
                                                  : true;  // a named datatype: its header is read, it holds no data
  trail_.pop_back();
  return ok;
}

// --- attributes --------------------------------------------------------------------------------

struct AttrScan {
  Walker* w;
  const std::string* path;
  bool (Walker::*visit)(hid_t, const char*, const std::string&);
};

herr_t on_attribute(hid_t obj, const char* name, const H5A_info_t*, void* data) {
  auto* s = static_cast<AttrScan*>(data);
  return (s->w->*(s->visit))(obj, name, *s->path) ? 0 : -1;
}

bool Walker::attributes(hid_t obj, const std::string& path) {
  AttrScan scan{this, &path, &Walker::attribute};
  hsize_t at = 0;
  if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &at, on_attribute, &scan) >= 0) return true;
  return fail(path, "corrupt file: the attributes cannot be listed");
}

// Reads the value of every integer, float and string attribute as the readers do (hdf5_util.cpp):
// numbers converted to int64/uint64/double, fixed strings as stored, variable-length strings
// through the global heap (where libhdf5 1.10 trusts stored lengths: fuzz findings 4 and 5).
// Attributes of other classes are never read by tqref; their headers are checked.
bool Walker::attribute(hid_t obj, const char* name, const std::string& path) {
  const std::string where = path + " attribute '" + printable(name) + "'";
  note_(where);
  Handle a(H5Aopen(obj, name, H5P_DEFAULT), H5Aclose);
  if (!a) return fail(where, "corrupt file: the attribute cannot be opened");
  Handle type(H5Aget_type(a.get()), H5Tclose), space(H5Aget_space(a.get()), H5Sclose);
  const hssize_t n = space ? H5Sget_simple_extent_npoints(space.get()) : -1;
  if (!type || n < 0) return fail(where, "corrupt file: unreadable type or dataspace");
  if (n > kMaxAttrElements)
    return fail(where, std::to_string(n) + " elements; allowed: at most " + std::to_string(kMaxAttrElements));
  const H5T_class_t cls = H5Tget_class(type.get());
  const size_t size = H5Tget_size(type.get());
  if (n == 0) return true;
  bool ok = true;
  if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
    if (const std::string why = number_type_problem(type.get()); !why.empty())
      return fail(where, "corrupt file: " + why);
    std::vector<double> v(static_cast<size_t>(n));
    ok = H5Aread(a.get(), H5T_NATIVE_DOUBLE, v.data()) >= 0;
    if (ok && cls == H5T_INTEGER) {  // attr_int reads integers so too
      std::vector<int64_t> i(static_cast<size_t>(n));
      ok = H5Aread(a.get(), integer_read_type(type.get()), i.data()) >= 0;
    }
  } else if (cls == H5T_STRING && H5Tis_variable_str(type.get()) > 0) {
    Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mt.get(), H5T_VARIABLE);
    H5Tset_cset(mt.get(), H5Tget_cset(type.get()));
    std::vector<char*> v(static_cast<size_t>(n), nullptr);
    ok = H5Aread(a.get(), mt.get(), v.data()) >= 0;
    for (size_t i = 0; ok && i < v.size(); ++i)
      if (v[i] && ::strnlen(v[i], kMaxStringBytes + 1) > kMaxStringBytes)
        return fail(where, "a string above 2^24 bytes; allowed: up to 16 MiB");
    if (ok) H5Dvlen_reclaim(mt.get(), space.get(), H5P_DEFAULT, v.data());
  } else if (cls == H5T_STRING) {
    if (size == 0 || uint64_t(size) * uint64_t(n) > kMaxStringBytes)
      return fail(where, "string of " + std::to_string(size) + " bytes x " + std::to_string(n) +
                         "; allowed: up to 16 MiB");
    std::vector<char> v(size * size_t(n));
    ok = H5Aread(a.get(), type.get(), v.data()) >= 0;
  }
  return ok || fail(where, "corrupt file: the value cannot be read");
}

// --- datasets ----------------------------------------------------------------------------------

// Creation properties: where the data lives and how it is encoded. `chunk` is left empty for
// contiguous and compact layouts.
bool Walker::storage(hid_t d, const std::string& path, size_t elem, std::vector<hsize_t>* chunk) {
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
    unsigned flags = 0, config = 0;
    size_t n_values = 0;
    char name[80] = {};
    const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), unsigned(i), &flags, &n_values, nullptr, sizeof name,
                                           name, &config);
    if (id != H5Z_FILTER_DEFLATE && id != H5Z_FILTER_SHUFFLE && id != H5Z_FILTER_FLETCHER32)
      return fail(path, "uses filter " + std::to_string(id) + " ('" + printable(name) +
                        "'); allowed: deflate (1), shuffle (2), fletcher32 (3)");
  }
  if (layout != H5D_CHUNKED) return true;
  const int rank = H5Pget_chunk(dcpl.get(), 0, nullptr);
  if (rank <= 0) return fail(path, "corrupt file: unreadable chunk shape");
  chunk->resize(size_t(rank));
  H5Pget_chunk(dcpl.get(), rank, chunk->data());
  uint64_t bytes = elem;
  for (hsize_t c : *chunk)
    if (c == 0 || __builtin_mul_overflow(bytes, uint64_t(c), &bytes) || bytes > kMaxChunkBytes)
      return fail(path, "chunks above " + std::to_string(kMaxChunkBytes >> 20) + " MiB; allowed: up to 64 MiB");
  return true;
}

bool Walker::dataset(hid_t d, const std::string& path) {
  Handle type(H5Dget_type(d), H5Tclose), space(H5Dget_space(d), H5Sclose);
  if (!type || !space) return fail(path, "corrupt file: unreadable type or dataspace");
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) return fail(path, "corrupt file: unreadable dataspace");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  const H5T_class_t cls = H5Tget_class(type.get());
  const size_t elem = H5Tget_size(type.get());
  if (elem == 0) return fail(path, "corrupt file: element size 0");
  std::vector<hsize_t> chunk;
  if (!storage(d, path, elem, &chunk)) return false;
  // Only the classes tqref reads (readers check dtypes exactly): other datasets are never read.
  if ((cls != H5T_INTEGER && cls != H5T_FLOAT) || elem > 8) return true;
  if (const std::string why = number_type_problem(type.get()); !why.empty()) return fail(path, "corrupt file: " + why);
  const std::vector<uint64_t> shape(dims.begin(), dims.end());
  const std::string size = dataset_size_problem(shape, elem, H5Dget_storage_size(d));
  if (!size.empty()) return fail(path, size);
  // Slabs: whole chunks (each decoded once) or, unchunked, rows of the innermost dimensions.
  std::vector<hsize_t> block(dims.size(), 1);
  if (!chunk.empty() && chunk.size() == dims.size()) {
    for (size_t i = 0; i < dims.size(); ++i) block[i] = std::min(chunk[i], dims[i]);
  } else {
    uint64_t fit = kSlabBytes / elem;
    for (size_t i = dims.size(); i-- > 0;) {
      block[i] = std::max<hsize_t>(1, std::min<hsize_t>(dims[i], fit));
      fit = block[i] == dims[i] ? fit / std::max<hsize_t>(dims[i], 1) : 0;
    }
  }
  uint64_t chunk_bytes = 0;
  if (!chunk.empty()) {
    chunk_bytes = elem;
    for (hsize_t c : chunk) chunk_bytes *= c;  // <= 64 MiB (storage())
  }
  jobs_.push_back({trail_, path, dims, block, elem, chunk.size() == dims.size() ? chunk_bytes : 0});
  return true;
}

// The stored form of the chunk at `at`, from the chunk index: inside the file, and not larger
// than the chunk itself (deflate adds a few bytes per 16 KiB, fletcher32 four). libhdf5 allocates
// the stored size before it reads, so a wild size in a damaged index is refused here.
bool Walker::chunk_stored(hid_t d, const std::vector<hsize_t>& at, uint64_t chunk_bytes, const std::string& path) {
  unsigned mask = 0;
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  if (H5Dget_chunk_info_by_coord(d, at.data(), &mask, &addr, &size) < 0)
    return fail(path, "corrupt file: the chunk index cannot be read");
  if (addr == HADDR_UNDEF) return true;  // not allocated: reads as the fill value
  const uint64_t most = chunk_bytes + chunk_bytes / 64 + 1024;
  if (size > most || addr > file_size_ || size > file_size_ - addr)
    return fail(path, "corrupt file: a chunk stores " + std::to_string(size) + " bytes at offset " +
                          std::to_string(addr) + " for " + std::to_string(chunk_bytes) + " bytes of data in a file of " +
                          std::to_string(file_size_) + " bytes");
  return true;
}

// The data phase: each recorded dataset opened again by its names from the root, then read.
bool Walker::data(hid_t file) {
  for (const DataJob& job : jobs_) {
    note_(job.path + " data");
    Handle at(H5Oopen(file, "/", H5P_DEFAULT), H5Oclose);
    for (const std::string& name : job.names)
      if (at) at = Handle(H5Oopen(at.get(), name.c_str(), H5P_DEFAULT), H5Oclose);
    if (!at) return fail(job.path, "corrupt file: the object cannot be opened");
    if (!slabs(at.get(), job)) return false;
  }
  return true;
}

// Reads every element, slab by slab: checksums verified, deflate streams decoded, chunk indexes
// followed. A slab that cannot be read is a corrupt file (a changed byte fails fletcher32).
bool Walker::slabs(hid_t d, const DataJob& job) {
  const std::vector<hsize_t>& dims = job.dims;
  const std::vector<hsize_t>& block = job.block;
  const std::string& path = job.path;
  uint64_t count = 1, slab = 1;
  for (size_t i = 0; i < dims.size(); ++i) count *= dims[i], slab *= block[i];
  if (count == 0) return true;
  Handle type(H5Dget_type(d), H5Tclose);
  Handle mem(type ? H5Tget_native_type(type.get(), H5T_DIR_ASCEND) : H5I_INVALID_HID, H5Tclose);
  if (!mem) return fail(path, "corrupt file: unreadable datatype");
  const hid_t mem_type = mem.get();
  std::vector<unsigned char> buf(size_t(slab) * job.elem);
  if (dims.empty())  // scalar
    return H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) >= 0 ||
           fail(path, "corrupt file: the data cannot be read (a checksum mismatch, damaged storage, or a chunk that inflates past the memory budget)");
  const uint64_t chunk_bytes = job.chunk_bytes;
  Handle file_space(H5Dget_space(d), H5Sclose);
  std::vector<hsize_t> start(dims.size(), 0), n(dims.size());
  for (;;) {
    note_(path + " data");
    if (chunk_bytes && !chunk_stored(d, start, chunk_bytes, path)) return false;
    hsize_t m = 1;
    for (size_t i = 0; i < dims.size(); ++i) m *= (n[i] = std::min(block[i], dims[i] - start[i]));
    Handle mem_space(H5Screate_simple(1, &m, nullptr), H5Sclose);
    if (H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, n.data(), nullptr) < 0 ||
        H5Dread(d, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, buf.data()) < 0)
      return fail(path, "corrupt file: the data cannot be read (a checksum mismatch, damaged storage, or a chunk that inflates past the memory budget)");
    size_t i = dims.size();
    while (i > 0 && (start[i - 1] += block[i - 1]) >= dims[i - 1]) start[--i] = 0;
    if (i == 0) return true;
  }
}

// The validated copy (finding 8, docs/reliability.md): the source's root group and everything
// under it, copied by libhdf5 (H5Ocopy decodes the source's metadata and encodes the copy itself)
// into an in-memory file, whose image becomes `out` after its first byte. The copy keeps the
// source's layouts and filters; its raw chunks are the source's, checked again when read.
// Attributes are not H5Ocopy's: libhdf5 1.10 crashes copying an object whose attributes are in
// dense storage (more than 8, as h5py writes them with libver='latest', or any file of the 1.10
// format) when one holds a variable-length string (h5copy crashes too). copy_attributes reads
// each attribute's value (libhdf5 decodes it, here in the child) and writes it onto the copied
// object (libhdf5 encodes it).
constexpr const char* kCopyRoot = "validated";

struct AttrCopy {
  hid_t dst;
  const std::string* path;
  uint64_t file_size;
  std::string problem;
};

// One attribute of `src` onto the copy: the same name (and its character set), datatype (a
// transient copy: a committed type is an object of the source file) and dataspace. Values are
// read and written in the type's memory form, variable-length data through the copy's global
// heap; references are written as zeros, as H5Ocopy writes them into another file without
// H5O_COPY_EXPAND_REFERENCE_FLAG. A fixed-size value larger than the file is a corrupt type.
herr_t copy_attribute(hid_t src, const char* name, const H5A_info_t* info, void* data) {
  auto* c = static_cast<AttrCopy*>(data);
  const auto fail = [&](const char* why) {
    c->problem = *c->path + " attribute '" + printable(name) + "': " + why;
    return herr_t(-1);
  };
  Handle a(H5Aopen(src, name, H5P_DEFAULT), H5Aclose);
  Handle stored(a ? H5Aget_type(a.get()) : H5I_INVALID_HID, H5Tclose);
  Handle type(stored ? H5Tcopy(stored.get()) : H5I_INVALID_HID, H5Tclose);
  Handle space(a ? H5Aget_space(a.get()) : H5I_INVALID_HID, H5Sclose);
  const hssize_t n = space ? H5Sget_simple_extent_npoints(space.get()) : -1;
  if (!type || n < 0) return fail("corrupt file: unreadable type or dataspace");
  const bool vlen = H5Tdetect_class(type.get(), H5T_VLEN) > 0, ref = H5Tdetect_class(type.get(), H5T_REFERENCE) > 0;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(uint64_t(H5Tget_size(type.get())), uint64_t(n), &bytes) ||
      (!vlen && bytes > c->file_size))
    return fail("corrupt file: a value larger than the file");
  Handle acpl(H5Pcreate(H5P_ATTRIBUTE_CREATE), H5Pclose);
  H5Pset_char_encoding(acpl.get(), info->cset);
  Handle copy(H5Acreate2(c->dst, name, type.get(), space.get(), acpl.get(), H5P_DEFAULT), H5Aclose);
  if (!copy) return fail("corrupt file: libhdf5 cannot copy it");
  if (n == 0) return 0;
  std::vector<unsigned char> value(size_t(bytes), 0);
  if (!ref && H5Aread(a.get(), type.get(), value.data()) < 0) return fail("corrupt file: the value cannot be read");
  const bool written = H5Awrite(copy.get(), type.get(), value.data()) >= 0;
  if (vlen && !ref) H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, value.data());
  return written ? 0 : fail("corrupt file: libhdf5 cannot copy its value");
}

// The attributes of `src` onto `dst`, in creation order where the source indexes it.
std::string copy_attributes(hid_t src, hid_t dst, const std::string& path, uint64_t file_size) {
  unsigned order = 0;
  H5O_info_t oi;
  if (H5Oget_info2(src, &oi, H5O_INFO_BASIC) < 0) return path + ": corrupt file: unreadable object header";
  Handle plist(oi.type == H5O_TYPE_GROUP     ? H5Gget_create_plist(src)
               : oi.type == H5O_TYPE_DATASET ? H5Dget_create_plist(src)
                                             : H5Tget_create_plist(src),
               H5Pclose);
  if (plist) H5Pget_attr_creation_order(plist.get(), &order);
  AttrCopy c{dst, &path, file_size, ""};
  hsize_t at = 0;
  const H5_index_t index = (order & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  if (H5Aiterate2(src, index, H5_ITER_INC, &at, copy_attribute, &c) >= 0) return "";
  return c.problem.empty() ? path + ": corrupt file: the attributes cannot be listed" : c.problem;
}

// Every object's attributes onto its copy: `src` and `dst` are the same group in the source and
// in the copy. Each copied object once (a second hard link to it in the copy is the same
// object), the links as the walk validated them.
std::string copy_attributes_below(hid_t src, hid_t dst, const std::string& path, uint64_t file_size,
                                  std::set<haddr_t>* done, const Note& note) {
  std::vector<std::string> names;
  LinkScan scan{&path, &names, ""};
  hsize_t at = 0;
  if (H5Literate(src, H5_INDEX_NAME, H5_ITER_INC, &at, on_link, &scan) < 0)
    return scan.bad.empty() ? path + ": corrupt file: the group's links cannot be listed" : scan.bad;
  for (const std::string& name : names) {
    const std::string where = join(path, name);
    note(where + " (copying attributes)");
    Handle s(H5Oopen(src, name.c_str(), H5P_DEFAULT), H5Oclose), d(H5Oopen(dst, name.c_str(), H5P_DEFAULT), H5Oclose);
    H5O_info_t info;
    if (!s || !d || H5Oget_info2(d.get(), &info, H5O_INFO_BASIC) < 0) return where + ": cannot open its copy";
    if (!done->insert(info.addr).second) continue;
    if (std::string why = copy_attributes(s.get(), d.get(), where, file_size); !why.empty()) return why;
    if (info.type == H5O_TYPE_GROUP)
      if (std::string why = copy_attributes_below(s.get(), d.get(), where, file_size, done, note); !why.empty())
        return why;
  }
  return "";
}

std::string copy_image(hid_t src, const Note& note, std::string& out) {
  note("/ (copying)");
  hsize_t file_size = 0;
  if (H5Fget_filesize(src, &file_size) < 0) return "/: cannot read the file size";
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_core(fapl.get(), size_t(1) << 20, 0);
  Handle dst(H5Fcreate("tqref-validated-copy", H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose);
  if (!dst) return "/: cannot create the validated copy in memory";
  Handle ocpypl(H5Pcreate(H5P_OBJECT_COPY), H5Pclose);
  H5Pset_copy_object(ocpypl.get(), H5O_COPY_WITHOUT_ATTR_FLAG);
  if (H5Ocopy(src, "/", dst.get(), kCopyRoot, ocpypl.get(), H5P_DEFAULT) < 0)
    return "/: corrupt file: libhdf5 cannot copy its objects";
  {
    Handle s(H5Oopen(src, "/", H5P_DEFAULT), H5Oclose), d(H5Oopen(dst.get(), kCopyRoot, H5P_DEFAULT), H5Oclose);
    if (!s || !d) return "/: cannot open the validated copy";
    H5O_info_t root;
    if (H5Oget_info2(d.get(), &root, H5O_INFO_BASIC) < 0) return "/: cannot open the validated copy";
    std::set<haddr_t> done = {root.addr};
    std::string why = copy_attributes(s.get(), d.get(), "/", file_size);
    if (why.empty()) why = copy_attributes_below(s.get(), d.get(), "/", file_size, &done, note);
    if (!why.empty()) return why;
  }
  const ssize_t n = H5Fflush(dst.get(), H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(dst.get(), nullptr, 0);
  if (n <= 0) return "/: cannot take the image of the validated copy";
  out.assign(size_t(n) + 1, 'I');
  if (H5Fget_file_image(dst.get(), out.data() + 1, size_t(n)) != n)
    return "/: cannot take the image of the validated copy";
  return "";
}

// The structure phase from the root: its attributes, then every object under it.
bool walk_structure(Walker& w, hid_t file, const Note& note) {
  Handle root(H5Oopen(file, "/", H5P_DEFAULT), H5Oclose);
  if (!root) return w.fail_at("/", "corrupt file: the root group cannot be opened");
  note("/");
  return w.attributes(root.get(), "/") && w.group(root.get(), "/", 0);
}

// In the child: open `path`, check that it is the file the parent checked (`expected`), walk its
// structure, run the reader's `check` on its attributes, walk its data and copy it. `out` is
// "P<object>: <problem>", "M<the check's whole message>" or "I<image>".
void walk_and_copy(const std::string& path, const FileIdentity& expected, const AttributeCheck& check,
                   const Note& note, std::string& out) {
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
  hsize_t size = 0;
  if (H5Fget_filesize(f.get(), &size) < 0) {
    out = "P/: cannot read the file size";
    return;
  }
  Walker w(note, size);
  if (walk_structure(w, f.get(), note) && check) {
    try {
      Handle root(H5Oopen(f.get(), "/", H5P_DEFAULT), H5Oclose);
      if (root) check(Node::over(path, std::move(root)), note);
    } catch (const std::exception& e) {  // the check's message names the file; anything else is said of it
      const std::string what = e.what();
      out = what.rfind(printable(path), 0) == 0 ? "M" + what : "P/: " + what;
      return;
    }
  }
  if (w.problem_.empty()) w.data(f.get());
  std::string problem = w.problem_;
  if (problem.empty()) problem = copy_image(f.get(), note, out);
  if (!problem.empty()) out = "P" + problem;
}

// In the parent: opens the image read-only in memory and returns its copy of the source's root.
// The file stays open while the group is (libhdf5's default close degree for this driver).
// `image` is released once the property list holds its own copy (the file's size once less).
Handle open_image(std::string&& image, const std::string& path) {
  static std::atomic<uint64_t> serial{0};  // core files with one name would be taken as one file
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_core(fapl.get(), size_t(1) << 20, 0);
  const bool set = H5Pset_file_image(fapl.get(), image.data(), image.size()) >= 0;
  std::string().swap(image);
  if (!set) throw Error(path + ": cannot open the validated copy in memory");
  const std::string name = "tqref-validated-copy-" + std::to_string(serial++);
  Handle f(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  Handle root(f ? H5Gopen2(f.get(), kCopyRoot, H5P_DEFAULT) : H5I_INVALID_HID, H5Gclose);
  if (!root) throw Error(path + ": cannot open the validated copy in memory");
  return root;
}

}  // namespace

std::string walk_file(hid_t file, const Note& note) {
  hsize_t size = 0;
  if (H5Fget_filesize(file, &size) < 0) return "/: cannot read the file size";
  Walker w(note, size);
  if (walk_structure(w, file, note)) w.data(file);
  return w.problem_;
}

void set_validation_in_process(bool in_process) { g_in_process = in_process; }
void set_validation_idle_timeout(double seconds) { g_idle_timeout_s = seconds; }

uint64_t copy_limit(uint64_t file_size) {
  return std::min(file_size + file_size / 4 + (uint64_t(1) << 20), memory_budget() / 2);
}

Handle open_validated(const std::string& path, const FileIdentity& identity, uint64_t file_size,
                      const AttributeCheck& check) {
  // The copy is held twice at its peak (the in-memory file and its image), in the child and in
  // this process: a file of more than half the budget is refused before the child starts.
  const std::string over = over_budget(mul_sat(file_size, 2), "the validated copy of the file (twice its size)");
  if (!over.empty()) throw Error(printable(path) + ": " + over);
  std::string out;
  if (g_in_process) {
    walk_and_copy(path, identity, check, [](const std::string&) {}, out);
  } else {
    IsolatedResult r = run_isolated(
        [&](std::string& o, const IsolatedNote& note) {
          walk_and_copy(path, identity, check, note, o);
          return true;
        },
        // The walk holds one slab (at most a 64 MiB chunk) and libhdf5's caches, the copy the
        // file's size twice (the in-memory file and its image); the budget bounds the rest, and
        // what libhdf5 allocates inside a read (an inflating deflate stream).
        {g_idle_timeout_s, size_t(copy_limit(file_size) + 1), memory_budget() + (uint64_t(256) << 20)});
    if (r.status == IsolatedResult::Status::ok) {
      out = std::move(r.data);
    } else if (r.status == IsolatedResult::Status::too_large) {
      out = "P/: corrupt file: its validated copy is larger than a copy of this file can be (allowed: at most " +
            std::to_string(copy_limit(file_size)) + " bytes, its size and a quarter plus 1 MiB, within half the memory budget)";
    } else {
      const std::string obj = r.last_note.empty() ? "/" : r.last_note;
      out = "P" + obj + ": corrupt file: libhdf5 failed while reading this object (" + r.describe(g_idle_timeout_s) + ")";
    }
  }
  if (out.empty()) throw Error(path + ":/: the validating pass sent no result");
  if (out[0] == 'M') throw Error(out.substr(1));
  if (out[0] != 'I') throw Error(path + ":" + out.substr(1));
  out.erase(0, 1);
  return open_image(std::move(out), path);
}

}  // namespace tqref::h5
