#include "io/hdf5_util.h"

#include <H5PLpublic.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <type_traits>

#include "io/atomic_output.h"
#include "io/described_file.h"
#include "io/hdf5_validate.h"
#include "io/input_file.h"
#include "io/memory_budget.h"
#include "io/text_escape.h"

namespace tqref::h5 {

namespace {

// API calls that failed, counted by the error handler below: write_file_atomic compares the
// count before and after writing a file, because libhdf5 reports some write failures only from
// calls whose result RAII destructors drop (a dataset's close flushing its last chunk).
std::atomic<uint64_t> g_failed_calls{0};

herr_t count_failure(hid_t, void*) {
  g_failed_calls.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

// HDF5 prints its own error stack by default; we turn errors into exceptions instead. Filter
// plugins are never loaded: tqref reads only the built-in filters it writes (hdf5_validate.h),
// and a plugin path from the environment (HDF5_PLUGIN_PATH) must not run code from a file. No
// library shutdown at exit (H5dont_atexit, before any other call): after a failed write (a full
// disk) libhdf5 1.10.8 keeps the file whose close failed and crashes closing it again in its exit
// handler (H5F__close_cb); every file tqref writes is closed before its rename, and read-only
// files need no flush.
struct Hdf5Setup {
  Hdf5Setup() {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, count_failure, nullptr);
    H5PLset_loading_state(0);
  }
} hdf5_setup;

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

std::string number_type_problem(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  const H5T_order_t order = H5Tget_order(type);
  if (cls == H5T_FLOAT) {
    for (hid_t std_type : {H5T_IEEE_F32LE, H5T_IEEE_F32BE, H5T_IEEE_F64LE, H5T_IEEE_F64BE})
      if (H5Tequal(type, std_type) > 0) return "";
    return "a float type of " + std::to_string(size) + " bytes that is not IEEE binary32 or binary64 (precision " +
           std::to_string(H5Tget_precision(type)) + " bits); allowed: IEEE 32- or 64-bit floats";
  }
  if (cls != H5T_INTEGER) return "not a number type";
  const size_t precision = H5Tget_precision(type);
  const int offset = H5Tget_offset(type);
  if ((size == 1 || size == 2 || size == 4 || size == 8) && precision == 8 * size && offset == 0 &&
      (order == H5T_ORDER_LE || order == H5T_ORDER_BE || (size == 1 && order == H5T_ORDER_NONE)))
    return "";
  return "an integer type of " + std::to_string(size) + " bytes with " + std::to_string(precision) +
         " bits of precision at bit offset " + std::to_string(offset) +
         "; allowed: 8-, 16-, 32- or 64-bit integers using all their bits";
}

hid_t integer_read_type(hid_t type) {
  return H5Tget_sign(type) == H5T_SGN_NONE && H5Tget_size(type) == 8 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
}

std::string dataset_size_problem(const std::vector<uint64_t>& dims, size_t elem, uint64_t stored) {
  uint64_t bytes = elem;
  for (uint64_t d : dims)
    if (__builtin_mul_overflow(bytes, d, &bytes))
      return "shape " + shape_str(dims) + " overflows 64 bits";
  if (std::string why = over_budget(bytes, "shape " + shape_str(dims)); !why.empty()) return why;
  if (bytes > stored * 2048 + (1u << 20))
    return "shape " + shape_str(dims) + " needs " + std::to_string(bytes) + " bytes but the file stores " +
           std::to_string(stored) + "; allowed: at most 2048:1 compression (corrupt or truncated dataset)";
  return "";
}

std::string Node::where(const std::string& obj) const {
  const std::string p = obj.empty() ? path_ : path_ == "/" ? "/" + obj : path_ + "/" + obj;
  return printable(file_) + ":" + printable(p);
}

Node Node::create_file(const std::string& path) {
  Handle fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  // Creation order tracked so readers list cases in the order written.
  H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_obj_track_times(fcpl.get(), 0);  // root group without timestamps: reproducible bytes
  // The 1.10 format: the chunk indexes (single chunk, fixed array) carry checksums like every
  // other metadata structure, so one changed byte anywhere in a file tqref wrote is either
  // unused or refused (docs/reliability.md). Readers need HDF5 1.10 or later.
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get());
  if (f < 0) throw Error(printable(path) + ": cannot create HDF5 file");
  return Node(path, "/", Handle(f, H5Fclose));
}

Node Node::open_file(const std::string& path, const AttributeCheck& check) {
  if (::access(path.c_str(), R_OK) != 0)
    throw Error(printable(path) + ": not a readable HDF5 file (" + std::strerror(errno) + ")");
  auto file = std::make_shared<DescribedFile>();
  file->path = path;
  try {
    // Descriptor checks first: a FIFO, a device or a directory never reaches libhdf5.
    file->file = std::make_unique<InputFile>(path, "HDF5 file");
  } catch (const InputError& e) {
    throw Error(e.what());
  }
  if (!has_hdf5_signature(*file->file))
    throw Error(printable(path) + ": not a readable HDF5 file (missing, truncated or corrupt)");
  // What this process knows of the file is the validating child's description (hdf5_validate.h)
  // of the file checked above (the child compares identities: not replaced in between); its data
  // are read through the same descriptor.
  file->desc = describe_validated(path, file->file->identity(), file->file->size());
  Node root(path, "/", std::move(file), 0);
  if (check) {
    try {
      check(root);
    } catch (const std::exception& e) {  // the check's message names the file; anything else is said of it
      const std::string what = e.what();
      throw Error(what.rfind(printable(path), 0) == 0 ? what : path + ":/: " + what);
    }
  }
  return root;
}

Node Node::open_file_rw(const std::string& path) {
  if (H5Fis_hdf5(path.c_str()) <= 0) throw Error(printable(path) + ": not a readable HDF5 file");
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) throw Error(printable(path) + ": cannot open HDF5 file for writing");
  return Node(path, "/", Handle(f, H5Fclose));
}

Node Node::group(const std::string& name) const {
  if (described_) return described_group(name);
  if (!has(name)) throw Error(where(name) + ": group missing");
  hid_t g = H5Gopen2(id(), name.c_str(), H5P_DEFAULT);
  if (g < 0) throw Error(where(name) + ": cannot open group");
  return Node(file_, path_ == "/" ? "/" + name : path_ + "/" + name, Handle(g, H5Gclose));
}

Node Node::create_group(const std::string& name) const {
  Handle gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  H5Pset_obj_track_times(gcpl.get(), 0);  // no timestamps: equal contents give equal bytes
  hid_t g = H5Gcreate2(id(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT);
  if (g < 0) throw Error(where(name) + ": cannot create group");
  return Node(file_, path_ == "/" ? "/" + name : path_ + "/" + name, Handle(g, H5Gclose));
}

bool Node::has(const std::string& name) const {
  if (described_) return described_find(name) != nullptr;
  return H5Lexists(id(), name.c_str(), H5P_DEFAULT) > 0;
}

std::vector<std::string> Node::children() const {
  if (described_) return described_children();
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
  if (count > 0 && !dims.empty()) {
    // Chunk along the first axis, about 1 MiB per chunk (one chunk for the small datasets).
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
  // The close flushes the chunks: on a full disk this is the call that fails.
  if (H5Dclose(ds.release()) < 0) throw Error(where(name) + ": write failed (disk full or file-size limit?)");
  if (!encoding.empty()) set_attr("encoding", encoding, name);
}

std::vector<uint64_t> Node::shape(const std::string& name) const {
  if (described_) {
    const ObjectDesc* o = described_find(name);
    if (!o) throw Error(where(name) + ": dataset missing");
    if (o->kind != ObjectDesc::Kind::dataset) throw Error(where(name) + ": not a dataset");
    return o->data.dims;
  }
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
  if (described_) return described_read<T>(name, shape_out);
  std::vector<uint64_t> dims = shape(name);
  Handle ds(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle ft(H5Dget_type(ds.get()), H5Tclose);
  H5T_class_t cls = H5Tget_class(ft.get());
  bool want_float = std::is_floating_point_v<T>;
  bool ok = (want_float ? cls == H5T_FLOAT : cls == H5T_INTEGER) && H5Tget_size(ft.get()) == sizeof(T);
  if (ok && !want_float) ok = (H5Tget_sign(ft.get()) == H5T_SGN_NONE) == std::is_unsigned_v<T>;
  if (!ok) throw Error(where(name) + ": wrong dtype; expected " + type_name<T>());
  if (const std::string why = number_type_problem(ft.get()); !why.empty())
    throw Error(where(name) + ": corrupt file: " + why);
  if (shape_out && !shape_out->empty() && *shape_out != dims)
    throw Error(where(name) + ": shape " + shape_str(dims) + "; expected " + shape_str(*shape_out));
  // A corrupt or hostile file can declare any extent: checked before anything is allocated.
  if (const std::string why = dataset_size_problem(dims, sizeof(T), H5Dget_storage_size(ds.get())); !why.empty())
    throw Error(where(name) + ": " + why);
  uint64_t count = 1;
  for (auto d : dims) count *= d;
  std::vector<T> out(count);
  if (count > 0 &&
      H5Dread(ds.get(), mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    throw Error(where(name) + ": read failed (corrupt data or checksum mismatch)");
  if (shape_out) *shape_out = dims;
  return out;
}

template <class T>
void Node::verify(const std::string& name, const std::vector<uint64_t>& shape) const {
  if (described_) return described_verify<T>(name, shape);
  std::vector<uint64_t> s = shape;
  read<T>(name, &s);  // a file this process wrote: libhdf5 reads it
}

#define TQREF_H5_INSTANTIATE(T)                                                              \
  template void Node::write_span<T>(const std::string&, const T*, uint64_t,                  \
                                    const std::vector<uint64_t>&, const std::string&) const; \
  template std::vector<T> Node::read<T>(const std::string&, std::vector<uint64_t>*) const;   \
  template void Node::verify<T>(const std::string&, const std::vector<uint64_t>&) const;
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

// One variable-length string (h5py's default), of a file this process wrote or opened for writing
// (files from elsewhere are read from their description: described_node.cpp).
std::string read_vlen_string(const Node& n, const std::string& obj, const std::string& name, hid_t a,
                             H5T_cset_t cset) {
  Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mt.get(), H5T_VARIABLE);
  // Same character set as the file (h5py writes UTF-8): HDF5 does not convert ASCII <-> UTF-8.
  H5Tset_cset(mt.get(), cset);
  char* s = nullptr;
  if (!mt || H5Aread(a, mt.get(), &s) < 0) throw Error(n.where(obj) + ": cannot read attribute '" + name + "'");
  std::string r = s ? std::string(s, ::strnlen(s, kMaxStringBytes + 1)) : std::string();
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Dvlen_reclaim(mt.get(), space.get(), H5P_DEFAULT, &s);
  if (r.size() > kMaxStringBytes)
    throw Error(n.where(obj) + ": attribute '" + name + "' is a string above 2^24 bytes; allowed: up to 16 MiB");
  return r;
}

// An integer attribute's file type must convert to int64 exactly: libhdf5 clamps out-of-range
// values silently (a uint64 2^63 would read as 2^63-1).
hid_t int_read_type(const Node& n, const std::string& obj, const std::string& name, hid_t type) {
  const size_t size = H5Tget_size(type);
  if (size == 0 || size > 8)
    throw Error(n.where(obj) + ": attribute '" + name + "' is a " + std::to_string(8 * size) +
                "-bit integer; allowed: up to 64 bits");
  if (const std::string why = number_type_problem(type); !why.empty())
    throw Error(n.where(obj) + ": attribute '" + name + "': corrupt file: " + why);
  return integer_read_type(type);
}

int64_t checked_int(const Node& n, const std::string& obj, const std::string& name, hid_t read_type,
                    const void* v) {
  if (read_type == H5T_NATIVE_UINT64) {
    uint64_t u = 0;
    std::memcpy(&u, v, 8);
    if (u > uint64_t(INT64_MAX))
      throw Error(n.where(obj) + ": attribute '" + name + "' = " + std::to_string(u) +
                  "; allowed: at most 2^63-1");
    return int64_t(u);
  }
  int64_t i = 0;
  std::memcpy(&i, v, 8);
  return i;
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
  if (described_) {
    const ObjectDesc* o = described_find(obj);
    if (!o) throw Error(where(obj) + ": object missing");
    return std::any_of(o->attrs.begin(), o->attrs.end(), [&](const AttrDesc& a) { return a.name == name; });
  }
  Handle o = open_obj(*this, obj);
  return H5Aexists(target(*this, o), name.c_str()) > 0;
}

std::string Node::attr_string(const std::string& name, const std::string& obj) const {
  if (described_) return described_attr_string(name, obj);
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw Error(where(obj) + ": attribute '" + name + "' is not a string");
  require_one_element(*this, obj, name, a.get());
  if (H5Tis_variable_str(type.get()) > 0)
    return read_vlen_string(*this, obj, name, a.get(), H5Tget_cset(type.get()));
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
  if (described_) return described_attr_int(name, obj);
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw Error(where(obj) + ": attribute '" + name + "' is not an integer");
  require_one_element(*this, obj, name, a.get());
  const hid_t rt = int_read_type(*this, obj, name, type.get());
  unsigned char v[8] = {};
  if (H5Aread(a.get(), rt, v) < 0) throw Error(where(obj) + ": cannot read attribute '" + name + "'");
  return checked_int(*this, obj, name, rt, v);
}

double Node::attr_double(const std::string& name, const std::string& obj) const {
  if (described_) return described_attr_double(name, obj);
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  H5T_class_t c = H5Tget_class(type.get());
  if (c != H5T_FLOAT && c != H5T_INTEGER)
    throw Error(where(obj) + ": attribute '" + name + "' is not a number");
  if (H5Tget_size(type.get()) > 8)
    throw Error(where(obj) + ": attribute '" + name + "' is a " + std::to_string(8 * H5Tget_size(type.get())) +
                "-bit number; allowed: up to 64 bits");
  if (const std::string why = number_type_problem(type.get()); !why.empty())
    throw Error(where(obj) + ": attribute '" + name + "': corrupt file: " + why);
  require_one_element(*this, obj, name, a.get());
  double v = 0;
  if (H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v) < 0)
    throw Error(where(obj) + ": cannot read attribute '" + name + "'");
  return v;
}

std::vector<int64_t> Node::attr_ints(const std::string& name, const std::string& obj) const {
  if (described_) return described_attr_ints(name, obj);
  Handle o;
  Handle a = open_attr(*this, obj, name, o);
  Handle type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_INTEGER)
    throw Error(where(obj) + ": attribute '" + name + "' is not an integer array");
  Handle space(H5Aget_space(a.get()), H5Sclose);
  const hssize_t n = space ? H5Sget_simple_extent_npoints(space.get()) : -1;
  if (n < 0 || n > 4096)
    throw Error(where(obj) + ": attribute '" + name + "' holds " + std::to_string(n) +
                " elements; allowed: 0 .. 4096");
  const hid_t rt = int_read_type(*this, obj, name, type.get());
  std::vector<unsigned char> raw(size_t(n) * 8);
  if (n > 0 && H5Aread(a.get(), rt, raw.data()) < 0)
    throw Error(where(obj) + ": cannot read attribute '" + name + "'");
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = checked_int(*this, obj, name, rt, raw.data() + 8 * i);
  return v;
}

std::vector<std::string> Node::attr_names(const std::string& obj) const {
  if (described_) return described_attr_names(obj);
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
  if (described_) {
    const AttrDesc& a = described_attr(name, obj);
    cls = a.cls == ValueClass::string     ? H5T_STRING
          : a.cls == ValueClass::floating ? H5T_FLOAT
          : a.cls == ValueClass::integer  ? H5T_INTEGER
                                          : H5T_NO_CLASS;
    rank = a.rank;
  } else {
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

void write_file_atomic(const std::string& path, const std::function<void(const Node& root)>& fill,
                       const std::function<void(const std::string& temp)>& before_commit) {
  common::AtomicOutput output(path);  // removed on error or interrupt
  const uint64_t failed_before = g_failed_calls.load();
  {
    const Node root = Node::create_file(output.temp_path());
    fill(root);
  }  // every handle of the file closed here
  if (g_failed_calls.load() != failed_before)
    throw Error(printable(path) + ": write failed (libhdf5 reported an error while writing the temporary " +
                printable(output.temp_path()) + "; disk full or file-size limit?)");
  if (before_commit) before_commit(output.temp_path());
  output.commit();
}

}  // namespace tqref::h5
