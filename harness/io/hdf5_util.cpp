#include "io/hdf5_util.h"

#include <cstring>
#include <type_traits>

#include "io/isolated_call.h"

// Variable-length strings are read in a child process that uses the parent's open file
// (isolated_call.h). HDF5's default sec2 driver then reads with pread, which leaves the file
// offset shared with the parent alone; without pread the child's lseek would move it under the
// parent's cached position.
#ifndef H5_HAVE_PREADWRITE
#error "libhdf5 without pread (H5_HAVE_PREADWRITE): the isolated variable-length string read is unsafe"
#endif

namespace tqref::h5 {

namespace {

// Deadline and size limit of one variable-length string read in the child: a valid attribute
// takes microseconds; libhdf5 looping on a corrupt global heap never ends (finding 4).
constexpr double kVlenReadTimeoutS = 5.0;
constexpr size_t kMaxStringBytes = size_t(1) << 24;

// HDF5 prints its own error stack by default; we turn errors into exceptions instead.
struct SilenceHdf5 {
  SilenceHdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }
} silence_hdf5;

// File-side type: little-endian, fixed, so files are the same on every host.
template <class T>
hid_t file_type() {
  if constexpr (std::is_same_v<T, uint8_t>) return H5T_STD_U8LE;
  else if constexpr (std::is_same_v<T, uint16_t>) return H5T_STD_U16LE;
  else if constexpr (std::is_same_v<T, uint32_t>) return H5T_STD_U32LE;
  else if constexpr (std::is_same_v<T, uint64_t>) return H5T_STD_U64LE;
  else if constexpr (std::is_same_v<T, int8_t>) return H5T_STD_I8LE;
  else if constexpr (std::is_same_v<T, int32_t>) return H5T_STD_I32LE;
  else if constexpr (std::is_same_v<T, int64_t>) return H5T_STD_I64LE;
  else if constexpr (std::is_same_v<T, float>) return H5T_IEEE_F32LE;
  else if constexpr (std::is_same_v<T, double>) return H5T_IEEE_F64LE;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
  else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
  else if constexpr (std::is_same_v<T, int8_t>) return "int8";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, double>) return "float64";
}

constexpr uint64_t kChunkMinBytes = 64 * 1024;
constexpr uint64_t kChunkTargetBytes = 1 << 20;

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0 && close_) close_(id_);
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = -1;
  }
  return *this;
}

Handle::~Handle() {
  if (id_ >= 0 && close_) close_(id_);
}

std::string Node::where(const std::string& obj) const {
  std::string p = path_ == "/" ? "/" + obj : (obj.empty() ? path_ : path_ + "/" + obj);
  if (obj.empty()) p = path_;
  return file_ + ":" + p;
}

Node Node::create_file(const std::string& path) {
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  // Creation order tracked so readers list cases in the order written.
  H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_obj_track_times(fcpl.get(), 0);  // root group without timestamps: reproducible bytes
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V18);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get());
  if (f < 0) throw Error(path + ": cannot create HDF5 file");
  return Node(path, "/", Handle(f, H5Fclose), std::make_shared<FileState>());
}

Node Node::open_file(const std::string& path) {
  htri_t is = H5Fis_hdf5(path.c_str());
  if (is <= 0) throw Error(path + ": not a readable HDF5 file (missing, truncated or corrupt)");
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) throw Error(path + ": cannot open HDF5 file (truncated or corrupt metadata)");
  return Node(path, "/", Handle(f, H5Fclose), std::make_shared<FileState>());
}

Node Node::open_file_rw(const std::string& path) {
  if (H5Fis_hdf5(path.c_str()) <= 0) throw Error(path + ": not a readable HDF5 file");
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw Error(path + ": cannot open HDF5 file for writing");
  return Node(path, "/", Handle(f, H5Fclose), std::make_shared<FileState>());
}

Node Node::group(const std::string& name) const {
  if (!has(name)) throw Error(where(name) + ": group missing");
  hid_t g = H5Gopen2(id(), name.c_str(), H5P_DEFAULT);
  if (g < 0) throw Error(where(name) + ": cannot open group");
  return Node(file_, path_ == "/" ? "/" + name : path_ + "/" + name, Handle(g, H5Gclose), state_);
}

Node Node::create_group(const std::string& name) const {
  Handle gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_obj_track_times(gcpl.get(), 0);  // no timestamps: equal contents give equal bytes
  hid_t g = H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT);
  if (g < 0) throw Error(where(name) + ": cannot create group");
  return Node(file_, path_ == "/" ? "/" + name : path_ + "/" + name, Handle(g, H5Gclose), state_);
}

bool Node::has(const std::string& name) const {
  return H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0;
}

std::vector<std::string> Node::children() const {
  std::vector<std::string> names;
  H5G_info_t info;
  if (H5Gget_info(id(), &info) < 0) throw Error(where() + ": cannot list group");
  H5_index_t idx = H5_INDEX_CRT_ORDER;
  Handle gcpl(H5Gget_create_plist(id()), H5Pclose);
  unsigned flags = 0;
  if (!gcpl || H5Pget_link_creation_order(gcpl.get(), &flags) < 0 ||
      !(flags & H5P_CRT_ORDER_INDEXED))
    idx = H5_INDEX_NAME;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    ssize_t n = H5Lget_name_by_idx(id(), ".", idx, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n < 0) throw Error(where() + ": cannot read link name");
    std::string s(size_t(n), '\0');
    H5Lget_name_by_idx(id(), ".", idx, H5_ITER_INC, i, s.data(), size_t(n) + 1, H5P_DEFAULT);
    names.push_back(s);
  }
  return names;
}

template <class T>
void Node::write_span(const std::string& name, const T* data, uint64_t n,
                      const std::vector<uint64_t>& shape, const std::string& encoding) const {
  uint64_t count = 1;
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  for (auto d : shape) count *= d;
  if (count != n)
    throw Error(where(name) + ": shape " + shape_str(shape) + " does not match " +
                std::to_string(n) + " elements");
  Handle space(H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5Pset_obj_track_times(dcpl.get(), 0);
  if (count * sizeof(T) >= kChunkMinBytes && !dims.empty()) {
    // Chunk along the first axis, about 1 MiB per chunk.
    std::vector<hsize_t> chunk(dims);
    uint64_t row = count / dims[0] * sizeof(T);
    chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(dims[0], kChunkTargetBytes / std::max<uint64_t>(row, 1)));
    H5Pset_chunk(dcpl.get(), int(chunk.size()), chunk.data());
    H5Pset_shuffle(dcpl.get());
    H5Pset_deflate(dcpl.get(), 1);
    H5Pset_fletcher32(dcpl.get());
  }
  Handle ds(H5Dcreate2(id(), name.c_str(), file_type<T>(), space.get(), H5P_DEFAULT, dcpl.get(),
                       H5P_DEFAULT),
            H5Dclose);
  if (!ds) throw Error(where(name) + ": cannot create dataset");
  if (count > 0 &&
      H5Dwrite(ds.get(), mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    throw Error(where(name) + ": write failed");
  if (!encoding.empty()) set_attr("encoding", encoding, name);
}

std::vector<uint64_t> Node::shape(const std::string& name) const {
  if (!has(name)) throw Error(where(name) + ": dataset missing");
  Handle ds(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds) throw Error(where(name) + ": not a dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) throw Error(where(name) + ": unreadable dataspace");
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return std::vector<uint64_t>(dims.begin(), dims.end());
}

template <class T>
std::vector<T> Node::read(const std::string& name, std::vector<uint64_t>* shape_out) const {
  std::vector<uint64_t> dims = shape(name);
  Handle ds(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle ft(H5Dget_type(ds.get()), H5Tclose);
  H5T_class_t cls = H5Tget_class(ft.get());
  bool want_float = std::is_floating_point_v<T>;
  bool ok = (want_float ? cls == H5T_FLOAT : cls == H5T_INTEGER) && H5Tget_size(ft.get()) == sizeof(T);
  if (ok && !want_float) ok = (H5Tget_sign(ft.get()) == H5T_SGN_NONE) == std::is_unsigned_v<T>;
  if (!ok) throw Error(where(name) + ": wrong dtype; expected " + type_name<T>());
  if (shape_out && !shape_out->empty() && *shape_out != dims)
    throw Error(where(name) + ": shape " + shape_str(dims) + "; expected " + shape_str(*shape_out));
  // A corrupt or hostile file can declare any extent: refuse element counts that overflow, and
  // sizes no stored data could decompress to (deflate expands at most ~1032:1; a dataset with
  // unallocated storage reads as fill values), before allocating anything.
  uint64_t count = 1;
  for (auto d : dims)
    if (__builtin_mul_overflow(count, d, &count) || count > (uint64_t(1) << 40) / sizeof(T))
      throw Error(where(name) + ": shape " + shape_str(dims) + " too large; allowed: < 2^40 bytes");
  const uint64_t stored = H5Dget_storage_size(ds.get());
  if (count * sizeof(T) > stored * 2048 + (1u << 20))
    throw Error(where(name) + ": shape " + shape_str(dims) + " needs " + std::to_string(count * sizeof(T)) +
                " bytes but the file stores " + std::to_string(stored) + "; allowed: at most 2048:1 "
                "compression (corrupt or truncated dataset)");
  std::vector<T> out(count);
  if (count > 0 &&
      H5Dread(ds.get(), mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    throw Error(where(name) + ": read failed (corrupt data or checksum mismatch)");
  if (shape_out) *shape_out = dims;
  return out;
}

#define TQREF_H5_INSTANTIATE(T)                                                              \
  template void Node::write_span<T>(const std::string&, const T*, uint64_t,                  \
                                    const std::vector<uint64_t>&, const std::string&) const; \
  template std::vector<T> Node::read<T>(const std::string&, std::vector<uint64_t>*) const;
TQREF_H5_INSTANTIATE(uint8_t)
TQREF_H5_INSTANTIATE(uint16_t)
TQREF_H5_INSTANTIATE(uint32_t)
TQREF_H5_INSTANTIATE(uint64_t)
TQREF_H5_INSTANTIATE(int8_t)
TQREF_H5_INSTANTIATE(int32_t)
TQREF_H5_INSTANTIATE(int64_t)
TQREF_H5_INSTANTIATE(float)
TQREF_H5_INSTANTIATE(double)
#undef TQREF_H5_INSTANTIATE

namespace {

Handle open_obj(const Node& n, const std::string& obj) {
  if (obj.empty()) return Handle();
  hid_t o = H5Oopen(n.id(), obj.c_str(), H5P_DEFAULT);
  if (o < 0) throw Error(n.where(obj) + ": object missing");
  return Handle(o, H5Oclose);
}

hid_t target(const Node& n, const Handle& h) { return h ? h.get() : n.id(); }

void write_attr(const Node& n, const std::string& obj, const std::string& name, hid_t ftype,
                hid_t mtype, const void* v, hid_t space_id) {
  Handle o = open_obj(n, obj);
  hid_t t = target(n, o);
  if (H5Aexists(t, name.c_str()) > 0) H5Adelete(t, name.c_str());
  Handle a(H5Acreate2(t, name.c_str(), ftype, space_id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a || H5Awrite(a.get(), mtype, v) < 0)
    throw Error(n.where(obj) + ": cannot write attribute '" + name + "'");
}

Handle open_attr(const Node& n, const std::string& obj, const std::string& name, Handle& o) {
  o = open_obj(n, obj);
  hid_t t = target(n, o);
  if (H5Aexists(t, name.c_str()) <= 0)
    throw Error(n.where(obj) + ": attribute '" + name + "' missing");
  Handle a(H5Aopen(t, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!a) throw Error(n.where(obj) + ": cannot open attribute '" + name + "'");
  return a;
}

// The scalar readers below read one element: an attribute holding several would be written past
// the single value H5Aread is given.
void require_one_element(const Node& n, const std::string& obj, const std::string& name, hid_t a) {
  Handle space(H5Aget_space(a), H5Sclose);
  const hssize_t count = space ? H5Sget_simple_extent_npoints(space.get()) : -1;
  if (count != 1)
    throw Error(n.where(obj) + ": attribute '" + name + "' holds " + std::to_string(count) +
                " elements; expected a single value");
}

// One variable-length string, read in a child process (isolated_call.h): libhdf5 1.10 follows
// the global heap's stored lengths without checking them, so a corrupt file can make H5Aread loop
// forever or copy with a wild length (docs/reliability.md, findings 4 and 5). The parent never
// reads the attribute itself.
std::string read_vlen_string(const Node& n, const std::string& obj, const std::string& name, hid_t a,
                             H5T_cset_t cset, FileState& file) {
  if (!file.vlen_failure.empty())
    throw Error(n.where(obj) + ": attribute '" + name + "' not read: libhdf5 already failed on a "
                "variable-length string of this file (" + file.vlen_failure + ")");
  const IsolatedResult r = run_isolated(
      [a, cset](std::string& out) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        // Same character set as the file (h5py writes UTF-8): HDF5 does not convert ASCII <-> UTF-8.
        H5Tset_cset(mt, cset);
        char* s = nullptr;
        if (mt < 0 || H5Aread(a, mt, &s) < 0) return false;
        if (s) out.assign(s, ::strnlen(s, kMaxStringBytes + 1));
        return true;  // nothing freed or closed: the child leaves with _exit
      },
      kVlenReadTimeoutS, kMaxStringBytes);
  switch (r.status) {
    case IsolatedResult::Status::ok:
      return r.data;
    case IsolatedResult::Status::refused:
      throw Error(n.where(obj) + ": cannot read attribute '" + name + "'");
    case IsolatedResult::Status::too_large:
      throw Error(n.where(obj) + ": attribute '" + name + "' is a variable-length string above " +
                  "2^24 bytes; allowed: up to 16 MiB");
    default:
      file.vlen_failure = "attribute '" + name + "' of " + n.where(obj) + ": " + r.describe(kVlenReadTimeoutS);
      throw Error(n.where(obj) + ": attribute '" + name + "' is corrupt (libhdf5 failed reading its "
                  "variable-length string: " + r.describe(kVlenReadTimeoutS) + ")");
  }
}

}  // namespace

void Node::set_attr(const std::string& name, const std::string& v, const std::string& obj) const {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<size_t>(v.size(), 1));
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  std::string padded = v.empty() ? std::string(1, '\0') : v;
  write_attr(*this, obj, name, type.get(), type.get(), padded.data(), space.get());
}

void Node::set_attr(const std::string& name, int64_t v, const std::string& obj) const {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  write_attr(*this, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v, space.get());
}

void Node::set_attr(const std::string& name, double v, const std::string& obj) const {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  write_attr(*this, obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v, space.get());
}

void Node::set_attr(const std::string& name, const std::vector<int64_t>& v,
                    const std::string& obj) const {
  hsize_t n = v.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  write_attr(*this, obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), space.get());
}

bool Node::has_attr(const std::string& name, const std::string& obj) const {
  Handle o = open_obj(*this, obj);
  return H5Aexists(target(*this, o), name.c_str()) > 0;
}

std::string Node::attr_string(const std::string& name, const std::string& obj) const {
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw Error(where(obj) + ": attribute '" + name + "' is not a string");
  require_one_element(*this, obj, name, a.get());
  if (H5Tis_variable_str(type.get()) > 0)
    return read_vlen_string(*this, obj, name, a.get(), H5Tget_cset(type.get()), *state_);
  size_t n = H5Tget_size(type.get());
  if (n == 0 || n > (size_t(1) << 24))  // a corrupt type size; our strings are far below 16 MiB
    throw Error(where(obj) + ": attribute '" + name + "' has string size " + std::to_string(n) +
                "; allowed: 1 .. 2^24 bytes");
  std::string r(n, '\0');
  if (H5Aread(a.get(), type.get(), r.data()) < 0)
    throw Error(where(obj) + ": cannot read attribute '" + name + "'");
  r.resize(r.find('\0') == std::string::npos ? n : r.find('\0'));
  return r;
}

int64_t Node::attr_int(const std::string& name, const std::string& obj) const {
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw Error(where(obj) + ": attribute '" + name + "' is not an integer");
  require_one_element(*this, obj, name, a.get());
  int64_t v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_INT64, &v) < 0)
    throw Error(where(obj) + ": cannot read attribute '" + name + "'");
  return v;
}

double Node::attr_double(const std::string& name, const std::string& obj) const {
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  H5T_class_t c = H5Tget_class(type.get());
  if (c != H5T_FLOAT && c != H5T_INTEGER)
    throw Error(where(obj) + ": attribute '" + name + "' is not a number");
  require_one_element(*this, obj, name, a.get());
  double v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0)
    throw Error(where(obj) + ": cannot read attribute '" + name + "'");
  return v;
}

std::vector<int64_t> Node::attr_ints(const std::string& name, const std::string& obj) const {
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw Error(where(obj) + ": attribute '" + name + "' is not an integer array");
  Handle space(H5Aget_space(a.get()), H5Sclose);
  hssize_t n = H5Sget_simple_extent_npoints(space.get());
  std::vector<int64_t> v(size_t(n > 0 ? n : 0));
  if (n > 0 && H5Aread(a.get(), H5T_NATIVE_INT64, v.data()) < 0)
    throw Error(where(obj) + ": cannot read attribute '" + name + "'");
  return v;
}

std::vector<std::string> Node::attr_names(const std::string& obj) const {
  Handle o = open_obj(*this, obj);
  const hid_t t = target(*this, o);
  H5O_info_t info;
  if (H5Oget_info2(t, &info, H5O_INFO_NUM_ATTRS) < 0)
    throw Error(where(obj) + ": cannot list attributes");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    const ssize_t n = H5Aget_name_by_idx(t, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n < 0 || n > 4096) throw Error(where(obj) + ": unreadable attribute name");
    std::string name(size_t(n), '\0');
    H5Aget_name_by_idx(t, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), size_t(n) + 1, H5P_DEFAULT);
    names.push_back(name);
  }
  return names;
}

Node::AttrValue Node::attr_value(const std::string& name, const std::string& obj) const {
  H5T_class_t cls;
  int rank;
  {
    Handle o;
    Handle a = open_attr(*this, obj, name, o);
    Handle type(H5Aget_type(a.get()), H5Tclose);
    Handle space(H5Aget_space(a.get()), H5Sclose);
    cls = H5Tget_class(type.get());
    rank = H5Sget_simple_extent_ndims(space.get());
  }
  if (cls == H5T_STRING) return attr_string(name, obj);
  if (cls == H5T_FLOAT) return attr_double(name, obj);
  if (cls == H5T_INTEGER) {
    if (rank == 0) return attr_int(name, obj);
    return attr_ints(name, obj);
  }
  throw Error(where(obj) + ": attribute '" + name + "' is not a string, number or integer array");
}

}  // namespace tqref::h5
