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
