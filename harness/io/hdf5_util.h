// Thin RAII layer over the HDF5 C API: the only place that calls H5* directly.
// Every error names the file and the dataset or attribute it concerns.
#pragma once
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace tqref::h5 {

// The native HDF5 memory type of T (the element types tqref files use).
template <class T>
hid_t mem_type() {
  if constexpr (std::is_same_v<T, uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, uint16_t>) return H5T_NATIVE_UINT16;
  else if constexpr (std::is_same_v<T, uint32_t>) return H5T_NATIVE_UINT32;
  else if constexpr (std::is_same_v<T, uint64_t>) return H5T_NATIVE_UINT64;
  else if constexpr (std::is_same_v<T, int8_t>) return H5T_NATIVE_INT8;
  else if constexpr (std::is_same_v<T, int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else static_assert(sizeof(T) == 0, "unsupported HDF5 element type");
}

// Raised for any HDF5 problem; what() names file and object.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle();
  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// A file (or group) with its path, for error messages. Files are created with object
// timestamps off and fixed library bounds, so equal contents give byte-identical files.
// State shared by every Node of one opened file.
struct FileState {
  // Set when libhdf5 failed (crashed, looped) reading a variable-length string of this file: its
  // global heap is corrupt, so later variable-length reads are refused at once instead of each
  // costing the isolated read's deadline. Holds the first failure's message.
  std::string vlen_failure;
};

class Node {
 public:
  static Node create_file(const std::string& path);  // truncates
  static Node open_file(const std::string& path);    // read-only
  static Node open_file_rw(const std::string& path); // read-write (tests edit attributes)
  Node group(const std::string& name) const;          // open existing
  Node create_group(const std::string& name) const;
  bool has(const std::string& name) const;
  std::vector<std::string> children() const;          // names in creation/alphabetic order
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  hid_t id() const { return h_.get(); }

  // Datasets: element type deduced from T (uint8/16/32/64, int32/64, float, double).
  // Datasets of at least `chunk_min_bytes` are chunked with shuffle + deflate + fletcher32.
  template <class T>
  void write(const std::string& name, const std::vector<T>& data,
             const std::vector<uint64_t>& shape, const std::string& encoding = "") const {
    write_span(name, data.data(), data.size(), shape, encoding);
  }
  // The same for `count` elements at `data` (count must equal the product of shape).
  template <class T>
  void write_span(const std::string& name, const T* data, uint64_t count,
                  const std::vector<uint64_t>& shape, const std::string& encoding = "") const;
  // Reads a dataset, checking its class, element size, signedness and (if given) its shape.
  template <class T>
  std::vector<T> read(const std::string& name, std::vector<uint64_t>* shape = nullptr) const;
  std::vector<uint64_t> shape(const std::string& name) const;

  // Attributes on this node (or on child `obj` when given).
  void set_attr(const std::string& name, const std::string& v, const std::string& obj = "") const;
  void set_attr(const std::string& name, int64_t v, const std::string& obj = "") const;
  void set_attr(const std::string& name, double v, const std::string& obj = "") const;
  // 1-D int64 array attribute (e.g. a launch grid [x, y, z]).
  void set_attr(const std::string& name, const std::vector<int64_t>& v,
                const std::string& obj = "") const;
  bool has_attr(const std::string& name, const std::string& obj = "") const;
  std::string attr_string(const std::string& name, const std::string& obj = "") const;
  int64_t attr_int(const std::string& name, const std::string& obj = "") const;
  double attr_double(const std::string& name, const std::string& obj = "") const;
  std::vector<int64_t> attr_ints(const std::string& name, const std::string& obj = "") const;
  // Every attribute by name (alphabetical), and one attribute as the kind of value it holds:
  // a string, a scalar integer, a scalar float, or a 1-D integer array.
  using AttrValue = std::variant<std::string, int64_t, double, std::vector<int64_t>>;
  std::vector<std::string> attr_names(const std::string& obj = "") const;
  AttrValue attr_value(const std::string& name, const std::string& obj = "") const;

  std::string where(const std::string& obj = "") const;  // "file.h5:/group/obj"

 private:
  Node(std::string file, std::string path, Handle h, std::shared_ptr<FileState> state)
      : file_(std::move(file)), path_(std::move(path)), h_(std::move(h)), state_(std::move(state)) {}
  std::string file_, path_;
  Handle h_;
  std::shared_ptr<FileState> state_;
};

}  // namespace tqref::h5
