// h5::Node over a file opened by Node::open_file: groups, attributes and datasets from the
// validating child's description, data through described_file.h. The messages are those of the
// libhdf5 side (hdf5_util.cpp), so a reader cannot tell which side it reads.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "io/described_file.h"
#include "io/hdf5_util.h"
#include "io/text_escape.h"

namespace tqref::h5 {

namespace {

std::string shape_text(const std::vector<uint64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

template <class T>
const char* type_text() {
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

// Elements of a big-endian dataset into this (little-endian) host's order.
template <class T>
void to_host_order(std::vector<T>& v) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tqref hosts are little-endian");
  if constexpr (sizeof(T) > 1)
    for (T& x : v) {
      unsigned char b[sizeof(T)];
      std::memcpy(b, &x, sizeof(T));
      std::reverse(b, b + sizeof(T));
      std::memcpy(&x, b, sizeof(T));
    }
}

int64_t checked(const Node& n, const std::string& obj, const std::string& name, const AttrDesc& a, size_t i) {
  if (a.uint64 && a.ints[i] > uint64_t(INT64_MAX))
    throw Error(n.where(obj) + ": attribute '" + name + "' = " + std::to_string(a.ints[i]) + "; allowed: at most 2^63-1");
  return int64_t(a.ints[i]);
}

void require_one(const Node& n, const std::string& obj, const std::string& name, const AttrDesc& a) {
  if (a.count != 1)
    throw Error(n.where(obj) + ": attribute '" + name + "' holds " + std::to_string(a.count) +
                " elements; expected a single value");
}

}  // namespace

const ObjectDesc& Node::described_object() const { return described_->desc.objects[object_]; }

const ObjectDesc* Node::described_find(const std::string& rel) const {
  const ObjectDesc* at = &described_object();
  size_t from = 0;
  while (from <= rel.size()) {
    const size_t slash = std::min(rel.find('/', from), rel.size());
    const std::string name = rel.substr(from, slash - from);
    from = slash + 1;
    if (name.empty() || name == ".") continue;
    const auto it = at->by_name.find(name);
    if (it == at->by_name.end()) return nullptr;
    at = &described_->desc.objects[it->second];
  }
  return at;
}

const AttrDesc& Node::described_attr(const std::string& name, const std::string& obj) const {
  const ObjectDesc* o = described_find(obj);
  if (!o) throw Error(where(obj) + ": object missing");
  const auto it = std::find_if(o->attrs.begin(), o->attrs.end(), [&](const AttrDesc& a) { return a.name == name; });
  if (it == o->attrs.end()) throw Error(where(obj) + ": attribute '" + name + "' missing");
  return *it;
}

Node Node::described_group(const std::string& name) const {
  const ObjectDesc* o = described_find(name);
  if (!o) throw Error(where(name) + ": group missing");
  if (o->kind != ObjectDesc::Kind::group) throw Error(where(name) + ": cannot open group");
  const uint32_t index = uint32_t(o - described_->desc.objects.data());
  return Node(file_, path_ == "/" ? "/" + name : path_ + "/" + name, described_, index);
}

std::vector<std::string> Node::described_children() const {
  std::vector<std::string> names;
  for (const auto& link : described_object().links) names.push_back(link.first);
  return names;
}

std::string Node::described_attr_string(const std::string& name, const std::string& obj) const {
  const AttrDesc& a = described_attr(name, obj);
  if (a.cls != ValueClass::string) throw Error(where(obj) + ": attribute '" + name + "' is not a string");
  require_one(*this, obj, name, a);
  return a.strings[0];
}

int64_t Node::described_attr_int(const std::string& name, const std::string& obj) const {
  const AttrDesc& a = described_attr(name, obj);
  if (a.cls != ValueClass::integer) throw Error(where(obj) + ": attribute '" + name + "' is not an integer");
  require_one(*this, obj, name, a);
  return checked(*this, obj, name, a, 0);
}

double Node::described_attr_double(const std::string& name, const std::string& obj) const {
  const AttrDesc& a = described_attr(name, obj);
  if (a.cls != ValueClass::floating && a.cls != ValueClass::integer)
    throw Error(where(obj) + ": attribute '" + name + "' is not a number");
  require_one(*this, obj, name, a);
  return a.reals[0];
}

std::vector<int64_t> Node::described_attr_ints(const std::string& name, const std::string& obj) const {
  const AttrDesc& a = described_attr(name, obj);
  if (a.cls != ValueClass::integer) throw Error(where(obj) + ": attribute '" + name + "' is not an integer array");
  if (a.count > 4096)
    throw Error(where(obj) + ": attribute '" + name + "' holds " + std::to_string(a.count) + " elements; allowed: 0 .. 4096");
  std::vector<int64_t> v(size_t(a.count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = checked(*this, obj, name, a, i);
  return v;
}

std::vector<std::string> Node::described_attr_names(const std::string& obj) const {
  const ObjectDesc* o = described_find(obj);
  if (!o) throw Error(where(obj) + ": object missing");
  std::vector<std::string> names;
  for (const AttrDesc& a : o->attrs) {
    if (a.name.size() > 4096) throw Error(where(obj) + ": unreadable attribute name");
    names.push_back(a.name);
  }
  return names;
}

template <class T>
const DatasetDesc& Node::described_dataset(const std::string& name, const std::vector<uint64_t>* shape) const {
  const ObjectDesc* o = described_find(name);
  if (!o) throw Error(where(name) + ": dataset missing");
  if (o->kind != ObjectDesc::Kind::dataset) throw Error(where(name) + ": not a dataset");
  const DatasetDesc& d = o->data;
  const bool want_float = std::is_floating_point_v<T>;
  bool ok = d.cls == (want_float ? ValueClass::floating : ValueClass::integer) && d.elem == sizeof(T);
  if (ok && !want_float) ok = !d.is_signed == std::is_unsigned_v<T>;
  if (!ok) throw Error(where(name) + ": wrong dtype; expected " + type_text<T>());
  if (shape && !shape->empty() && *shape != d.dims)
    throw Error(where(name) + ": shape " + shape_text(d.dims) + "; expected " + shape_text(*shape));
  // A corrupt or hostile file can declare any extent: checked before anything is allocated.
  if (const std::string why = dataset_size_problem(d.dims, sizeof(T), d.stored); !why.empty())
    throw Error(where(name) + ": " + why);
  return d;
}

template <class T>
std::vector<T> Node::described_read(const std::string& name, std::vector<uint64_t>* shape_out) const {
  const DatasetDesc& d = described_dataset<T>(name, shape_out);
  uint64_t count = 1;
  for (uint64_t x : d.dims) count *= x;
  std::vector<T> out(count);
  read_dataset_bytes(*described_, d, where(name), reinterpret_cast<uint8_t*>(out.data()));
  if (d.big_endian) to_host_order(out);
  if (shape_out) *shape_out = d.dims;
  return out;
}

template <class T>
void Node::described_verify(const std::string& name, const std::vector<uint64_t>& shape) const {
  verify_dataset_bytes(*described_, described_dataset<T>(name, &shape), where(name));
}

#define TQREF_H5_INSTANTIATE(T)                                                                    \
  template std::vector<T> Node::described_read<T>(const std::string&, std::vector<uint64_t>*) const; \
  template void Node::described_verify<T>(const std::string&, const std::vector<uint64_t>&) const;
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

}  // namespace tqref::h5
