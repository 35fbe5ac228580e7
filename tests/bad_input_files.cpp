#include "bad_input_files.h"

#include <hdf5.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <type_traits>

namespace tqref::badfiles {

namespace {

// Raw HDF5 handles: this generator must be able to write what tqref's own layer refuses to.
struct Id {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Id() {
    if (id >= 0) close(id);
  }
};

void must(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("bad_input_files: " + what);
}

Id open_rw(const fs::path& file) {
  Id f{H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose};
  must(f.id >= 0, "cannot open " + file.string());
  return f;
}

void write_attr(const fs::path& file, const std::string& obj, const std::string& name, hid_t type,
                const void* v) {
  Id f = open_rw(file);
  Id o{H5Oopen(f.id, obj.c_str(), H5P_DEFAULT), H5Oclose};
  must(o.id >= 0, "no object " + obj);
  if (H5Aexists(o.id, name.c_str()) > 0) H5Adelete(o.id, name.c_str());
  Id space{H5Screate(H5S_SCALAR), H5Sclose};
  Id a{H5Acreate2(o.id, name.c_str(), type, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  must(a.id >= 0 && H5Awrite(a.id, type, v) >= 0, "cannot write attribute " + obj + "@" + name);
}

std::vector<char> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void spit(const fs::path& p, const std::vector<char>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(b.data(), std::streamsize(b.size()));
  must(bool(out), "cannot write " + p.string());
}

}  // namespace

CaseNames find_cases(const std::string& file) {
  CaseNames r;
  h5::Node root = h5::Node::open_file(file);
  h5::Node cases = root.group("cases");
  for (const std::string& n : cases.children()) {
    const std::string kind = cases.group(n).attr_string("kind");
    if (kind == "writer" && r.writer.empty()) r.writer = "/cases/" + n;
    if (kind == "decode" && r.decode.empty()) r.decode = "/cases/" + n;
  }
  return r;
}

void truncate_copy(const fs::path& from, const fs::path& to, double keep_fraction) {
  std::vector<char> b = slurp(from);
  b.resize(size_t(double(b.size()) * keep_fraction));
  spit(to, b);
}

void flip_bytes(const fs::path& file, uint64_t offset, uint64_t count) {
  std::vector<char> b = slurp(file);
  must(offset + count <= b.size(), "flip_bytes past the end of " + file.string());
  for (uint64_t i = offset; i < offset + count; ++i) b[i] = char(b[i] ^ 0xFF);
  spit(file, b);
}

void set_int_attr(const fs::path& file, const std::string& obj, const std::string& name, int64_t v) {
  write_attr(file, obj, name, H5T_NATIVE_INT64, &v);
}

void set_double_attr(const fs::path& file, const std::string& obj, const std::string& name, double v) {
  write_attr(file, obj, name, H5T_NATIVE_DOUBLE, &v);
}

void set_narrow_int_attr(const fs::path& file, const std::string& obj, const std::string& name, int64_t v,
                         size_t precision) {
  Id type{H5Tcopy(H5T_STD_I64LE), H5Tclose};
  must(H5Tset_precision(type.id, precision) >= 0, "cannot set integer precision");
  write_attr(file, obj, name, type.id, &v);
}

void set_rebiased_double_attr(const fs::path& file, const std::string& obj, const std::string& name, double v,
                              size_t ebias) {
  Id type{H5Tcopy(H5T_IEEE_F64LE), H5Tclose};
  must(H5Tset_ebias(type.id, ebias) >= 0, "cannot set exponent bias");
  write_attr(file, obj, name, type.id, &v);
}

void set_string_attr(const fs::path& file, const std::string& obj, const std::string& name,
                     const std::string& v) {
  Id type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, v.empty() ? 1 : v.size());
  std::string padded = v.empty() ? std::string(1, '\0') : v;
  write_attr(file, obj, name, type.id, padded.data());
}

void delete_attr(const fs::path& file, const std::string& obj, const std::string& name) {
  Id f = open_rw(file);
  must(H5Adelete_by_name(f.id, obj.c_str(), name.c_str(), H5P_DEFAULT) >= 0,
       "cannot delete attribute " + obj + "@" + name);
}

void delete_link(const fs::path& file, const std::string& obj) {
  Id f = open_rw(file);
  must(H5Ldelete(f.id, obj.c_str(), H5P_DEFAULT) >= 0, "cannot delete " + obj);
}

void replace_with_external_link(const fs::path& file, const std::string& obj, const fs::path& target_file,
                                const std::string& target_obj) {
  Id f = open_rw(file);
  must(H5Ldelete(f.id, obj.c_str(), H5P_DEFAULT) >= 0, "cannot delete " + obj);
  must(H5Lcreate_external(target_file.c_str(), target_obj.c_str(), f.id, obj.c_str(), H5P_DEFAULT,
                          H5P_DEFAULT) >= 0, "cannot create external link " + obj);
}

void replace_with_soft_link(const fs::path& file, const std::string& obj, const std::string& target_obj) {
  Id f = open_rw(file);
  must(H5Ldelete(f.id, obj.c_str(), H5P_DEFAULT) >= 0, "cannot delete " + obj);
  must(H5Lcreate_soft(target_obj.c_str(), f.id, obj.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0,
       "cannot create soft link " + obj);
}

void replace_with_user_defined_link(const fs::path& file, const std::string& obj) {
  // A link class of the user range (65 .. 255), registered only here: libhdf5 needs the class to
  // create such a link; a reader sees an unknown link type.
  // The class must be able to traverse: this one never resolves.
  static const H5L_class_t ud = {H5L_LINK_CLASS_T_VERS, H5L_type_t(200), "tqref-test-ud", nullptr, nullptr, nullptr,
                                 [](const char*, hid_t, const void*, size_t, hid_t, hid_t) -> hid_t { return -1; },
                                 nullptr, nullptr};
  if (H5Lis_registered(ud.id) <= 0) must(H5Lregister(&ud) >= 0, "cannot register a user-defined link class");
  Id f = open_rw(file);
  must(H5Ldelete(f.id, obj.c_str(), H5P_DEFAULT) >= 0, "cannot delete " + obj);
  const char payload[] = "/etc/passwd";
  must(H5Lcreate_ud(f.id, obj.c_str(), ud.id, payload, sizeof payload, H5P_DEFAULT, H5P_DEFAULT) >= 0,
       "cannot create user-defined link " + obj);
}

namespace {

// Unlinks dataset `obj` and creates one of the same dtype and shape with `dcpl` (its data unwritten).
void recreate_dataset(hid_t f, const std::string& obj, hid_t dcpl) {
  hid_t type = -1, space = -1;
  {
    Id old{H5Dopen2(f, obj.c_str(), H5P_DEFAULT), H5Dclose};
    must(old.id >= 0, "no dataset " + obj);
    type = H5Dget_type(old.id);
    space = H5Dget_space(old.id);
  }
  Id t{type, H5Tclose}, sp{space, H5Sclose};
  must(H5Ldelete(f, obj.c_str(), H5P_DEFAULT) >= 0, "cannot delete " + obj);
  Id d{H5Dcreate2(f, obj.c_str(), t.id, sp.id, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose};
  must(d.id >= 0, "cannot create " + obj);
}

hsize_t dataset_bytes(hid_t f, const std::string& obj) {
  Id d{H5Dopen2(f, obj.c_str(), H5P_DEFAULT), H5Dclose};
  must(d.id >= 0, "no dataset " + obj);
  Id t{H5Dget_type(d.id), H5Tclose}, sp{H5Dget_space(d.id), H5Sclose};
  return hsize_t(H5Sget_simple_extent_npoints(sp.id)) * H5Tget_size(t.id);
}

}  // namespace

void replace_with_external_storage(const fs::path& file, const std::string& obj, const fs::path& external) {
  Id f = open_rw(file);
  Id dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  must(H5Pset_external(dcpl.id, external.c_str(), 0, dataset_bytes(f.id, obj)) >= 0, "cannot set external storage");
  recreate_dataset(f.id, obj, dcpl.id);
}

void replace_with_virtual(const fs::path& file, const std::string& obj, const fs::path& source_file,
                          const std::string& source_obj) {
  Id f = open_rw(file);
  hid_t space_id = -1;
  {
    Id d{H5Dopen2(f.id, obj.c_str(), H5P_DEFAULT), H5Dclose};
    must(d.id >= 0, "no dataset " + obj);
    space_id = H5Dget_space(d.id);
  }
  Id space{space_id, H5Sclose};
  Id dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  must(H5Pset_virtual(dcpl.id, space.id, source_file.c_str(), source_obj.c_str(), space.id) >= 0,
       "cannot map a virtual dataset");
  recreate_dataset(f.id, obj, dcpl.id);
}

void replace_with_scaleoffset(const fs::path& file, const std::string& obj) {
  Id f = open_rw(file);
  Id dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  hsize_t chunk[1] = {1};
  must(H5Pset_chunk(dcpl.id, 1, chunk) >= 0 && H5Pset_scaleoffset(dcpl.id, H5Z_SO_INT, H5Z_SO_INT_MINBITS_DEFAULT) >= 0,
       "cannot set the scale-offset filter");
  recreate_dataset(f.id, obj, dcpl.id);
}

void flip_stored_byte(const fs::path& file, const std::string& obj, uint64_t offset) {
  haddr_t addr = HADDR_UNDEF;
  hsize_t size = 0;
  {
    Id f{H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
    Id d{H5Dopen2(f.id, obj.c_str(), H5P_DEFAULT), H5Dclose};
    must(d.id >= 0, "no dataset " + obj);
    Id space{H5Dget_space(d.id), H5Sclose};
    std::vector<hsize_t> at(size_t(H5Sget_simple_extent_ndims(space.id)));
    unsigned mask = 0;
    must(H5Dget_chunk_info(d.id, space.id, 0, at.data(), &mask, &addr, &size) >= 0, obj + " has no chunk");
  }
  must(offset < size, "flip_stored_byte past the end of the first chunk of " + obj);
  std::vector<char> b = slurp(file);
  b[addr + offset] = char(b[addr + offset] ^ 0x01);
  spit(file, b);
}

void set_uint64_attr(const fs::path& file, const std::string& obj, const std::string& name, uint64_t v) {
  write_attr(file, obj, name, H5T_NATIVE_UINT64, &v);
}

void rename_link(const fs::path& file, const std::string& from, const std::string& to) {
  Id f = open_rw(file);
  must(H5Lmove(f.id, from.c_str(), f.id, to.c_str(), H5P_DEFAULT, H5P_DEFAULT) >= 0, "cannot move " + from);
}

void write_zero_dataset(const fs::path& file, const std::string& obj, const std::vector<uint64_t>& shape,
                        uint64_t chunk_rows) {
  Id f = open_rw(file);
  if (H5Lexists(f.id, obj.c_str(), H5P_DEFAULT) > 0) must(H5Ldelete(f.id, obj.c_str(), H5P_DEFAULT) >= 0, "delete");
  std::vector<hsize_t> dims(shape.begin(), shape.end()), chunk(dims);
  chunk[0] = chunk_rows;
  Id space{H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose};
  Id dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  must(H5Pset_chunk(dcpl.id, int(chunk.size()), chunk.data()) >= 0 && H5Pset_deflate(dcpl.id, 9) >= 0, "chunking");
  Id d{H5Dcreate2(f.id, obj.c_str(), H5T_STD_U16LE, space.id, H5P_DEFAULT, dcpl.id, H5P_DEFAULT), H5Dclose};
  must(d.id >= 0, "cannot create " + obj);
  // One chunk written through the filter, read back compressed, then copied to every chunk.
  hsize_t elems = 1;
  for (hsize_t c : chunk) elems *= c;
  std::vector<uint16_t> zeros(elems, 0);
  std::vector<hsize_t> at(dims.size(), 0);
  {
    Id fs{H5Dget_space(d.id), H5Sclose}, ms{H5Screate_simple(int(chunk.size()), chunk.data(), nullptr), H5Sclose};
    must(H5Sselect_hyperslab(fs.id, H5S_SELECT_SET, at.data(), nullptr, chunk.data(), nullptr) >= 0 &&
             H5Dwrite(d.id, H5T_NATIVE_UINT16, ms.id, fs.id, H5P_DEFAULT, zeros.data()) >= 0,
         "cannot write the first chunk");
  }
  must(H5Dflush(d.id) >= 0, "flush");
  hsize_t bytes = 0;
  must(H5Dget_chunk_storage_size(d.id, at.data(), &bytes) >= 0, "chunk size");
  std::vector<char> packed(bytes);
  uint32_t filters = 0;
  must(H5Dread_chunk(d.id, H5P_DEFAULT, at.data(), &filters, packed.data()) >= 0, "read chunk");
  for (at[0] = chunk_rows; at[0] < dims[0]; at[0] += chunk_rows)
    must(H5Dwrite_chunk(d.id, H5P_DEFAULT, filters, at.data(), bytes, packed.data()) >= 0, "write chunk");
}

template <class T>
void rewrite_dataset(const fs::path& file, const std::string& obj, const std::vector<T>& data,
                     const std::vector<uint64_t>& shape) {
  Id f = open_rw(file);
  if (H5Lexists(f.id, obj.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f.id, obj.c_str(), H5P_DEFAULT);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  Id space{H5Screate_simple(int(dims.size()), dims.data(), nullptr), H5Sclose};
  Id d{H5Dcreate2(f.id, obj.c_str(), h5::mem_type<T>(), space.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
       H5Dclose};
  must(d.id >= 0, "cannot create " + obj);
  must(data.empty() || H5Dwrite(d.id, h5::mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) >= 0,
       "cannot write " + obj);
}

template <class T>
void edit_dataset(const fs::path& file, const std::string& obj,
                  const std::function<void(std::vector<T>&)>& edit) {
  Id f = open_rw(file);
  Id d{H5Dopen2(f.id, obj.c_str(), H5P_DEFAULT), H5Dclose};
  must(d.id >= 0, "no dataset " + obj);
  Id space{H5Dget_space(d.id), H5Sclose};
  std::vector<T> v(size_t(H5Sget_simple_extent_npoints(space.id)));
  must(H5Dread(d.id, h5::mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0, "cannot read " + obj);
  const size_t n = v.size();
  edit(v);
  must(v.size() == n, "edit_dataset changed the element count of " + obj);
  must(H5Dwrite(d.id, h5::mem_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0, "cannot write " + obj);
}

#define TQREF_BADFILES_INSTANTIATE(T)                                                           \
  template void rewrite_dataset<T>(const fs::path&, const std::string&, const std::vector<T>&,  \
                                   const std::vector<uint64_t>&);                               \
  template void edit_dataset<T>(const fs::path&, const std::string&,                            \
                                const std::function<void(std::vector<T>&)>&);
TQREF_BADFILES_INSTANTIATE(uint8_t)
TQREF_BADFILES_INSTANTIATE(uint16_t)
TQREF_BADFILES_INSTANTIATE(uint64_t)
TQREF_BADFILES_INSTANTIATE(int32_t)
TQREF_BADFILES_INSTANTIATE(int64_t)
TQREF_BADFILES_INSTANTIATE(float)
#undef TQREF_BADFILES_INSTANTIATE

}  // namespace tqref::badfiles
