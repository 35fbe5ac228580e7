// Thin RAII layer over the HDF5 C API: the only place that calls H5* directly (with the
// validating pass of hdf5_validate.cpp). Every error names the file and the dataset or attribute
// it concerns; object names from a file are shown through printable() (text_escape.h).
#pragma once
#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <functional>
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
  // Gives up ownership (the caller closes the id and checks the result).
  hid_t release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

// Strings tqref reads are at most this long (attributes; a stored YAML sweep is far shorter).
inline constexpr size_t kMaxStringBytes = size_t(1) << 24;

// "" when a dataset of `dims` elements of `elem` bytes, `stored` bytes in the file, may be read
// into memory; else why not: an element count that overflows 64 bits, more bytes than the memory
// budget (memory_budget.h), or more than 2048 times the stored bytes (deflate cannot expand more
// than ~1032:1; unallocated chunks read as fill values, so a huge declared extent can sit on a
// few stored bytes). The validating pass and Node::read both apply it.
std::string dataset_size_problem(const std::vector<uint64_t>& dims, size_t elem, uint64_t stored);

// "" when `type` (of class integer or float) is a standard number type, the only kind tqref
// writes or reads: an integer of 1, 2, 4 or 8 bytes using all of its bits, or an IEEE binary32 or
// binary64 float; either byte order. Else why not. libhdf5 1.10 converts whatever precision and
// offset the metadata claims: an 8-byte integer that claims 193 bits overran a stack buffer
// inside H5Aread and left the library's state damaged for the next file (fuzz finding 7,
// docs/reliability.md), so the validating pass and every reader refuse such a type before any
// value is converted.
std::string number_type_problem(hid_t type);
// The memory type integer attributes are read as: uint64 for 8-byte unsigned ones, else int64.
hid_t integer_read_type(hid_t type);

class Node;
struct DescribedFile;
struct ObjectDesc;
struct AttrDesc;
struct DatasetDesc;

// A reader's checks on the attributes of a file, run by Node::open_file once the file's
// description is read and before any data is, so that what the attributes already refuse costs no
// reading: a golden case whose pools, from its attributes, exceed the memory budget
// (golden::check_case_memory, io/case_io.h). It throws a std::exception whose what() is the whole
// message (file, object, value, allowed range) to refuse the file.
using AttributeCheck = std::function<void(const Node& root)>;

// A file (or group) with its path, for error messages. Files are created in the HDF5 1.10 format
// (every metadata structure, chunk indexes included, carries a checksum) with object timestamps
// off, so equal contents give byte-identical files.
class Node {
 public:
  static Node create_file(const std::string& path);  // truncates; see write_file_atomic below
  // Read-only, under the untrusted-file policy: a regular file (input_file.h) that passes the
  // validating pass (hdf5_validate.h); throws Error naming the file and the object otherwise.
  // The node reads the child's description of the file and its data through pread
  // (described_file.h), never through libhdf5. With `check`, a reader's checks on the attributes
  // before any data is read (AttributeCheck above).
  static Node open_file(const std::string& path, const AttributeCheck& check = {});
  static Node open_file_rw(const std::string& path); // read-write (tests edit attributes)
  Node group(const std::string& name) const;          // open existing
  Node create_group(const std::string& name) const;
  bool has(const std::string& name) const;
  std::vector<std::string> children() const;          // names in creation/alphabetic order
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  // The libhdf5 id of a file this process created or opened for writing; -1 for one opened by
  // open_file (libhdf5 does not read those in this process).
  hid_t id() const { return h_.get(); }

  // Datasets: element type deduced from T (uint8/16/32/64, int32/64, float, double). Every
  // non-empty dataset is chunked (about 1 MiB per chunk) with shuffle + deflate + fletcher32, so
  // one changed byte of its data reads as a checksum error, not as different data.
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
  // Checks a dataset as read() does (class, element size, signedness, `shape`, size) and its stored
  // data (checksums; decoding where there is none), keeping nothing: for readers that show a
  // dataset's size but not its values (golden::read_case_summary).
  template <class T>
  void verify(const std::string& name, const std::vector<uint64_t>& shape) const;
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

  // "file.h5:/group/obj", names shown through printable().
  std::string where(const std::string& obj = "") const;

 private:
  Node(std::string file, std::string path, Handle h) : file_(std::move(file)), path_(std::move(path)), h_(std::move(h)) {}
  Node(std::string file, std::string path, std::shared_ptr<const DescribedFile> d, uint32_t object)
      : file_(std::move(file)), path_(std::move(path)), described_(std::move(d)), object_(object) {}
  std::string file_, path_;
  Handle h_;
  // A file opened by open_file: its description, and the object this node is (described_node.cpp).
  std::shared_ptr<const DescribedFile> described_;
  uint32_t object_ = 0;
  const ObjectDesc& described_object() const;
  // The object at `rel` (names separated by '/') below this one; nullptr when there is none.
  const ObjectDesc* described_find(const std::string& rel) const;
  // Attribute `name` of `obj` (this node when ""); throws Error "... missing" when there is none.
  const AttrDesc& described_attr(const std::string& name, const std::string& obj) const;
  Node described_group(const std::string& name) const;
  std::vector<std::string> described_children() const;
  std::string described_attr_string(const std::string& name, const std::string& obj) const;
  int64_t described_attr_int(const std::string& name, const std::string& obj) const;
  double described_attr_double(const std::string& name, const std::string& obj) const;
  std::vector<int64_t> described_attr_ints(const std::string& name, const std::string& obj) const;
  std::vector<std::string> described_attr_names(const std::string& obj) const;
  template <class T>
  const DatasetDesc& described_dataset(const std::string& name, const std::vector<uint64_t>* shape) const;
  template <class T>
  std::vector<T> described_read(const std::string& name, std::vector<uint64_t>* shape) const;
  template <class T>
  void described_verify(const std::string& name, const std::vector<uint64_t>& shape) const;
};

// Writes an HDF5 file whole or not at all: `fill` writes into a temporary (AtomicOutput,
// atomic_output.h) that is closed, given to `before_commit` (when set: it may read the file back
// and throw) and renamed into place. Throws Error naming `path` (the temporary removed) when any
// libhdf5 call failed while the file was written: on a full disk only the failed chunk flush of
// a dataset close reports it, while H5Fflush and H5Fclose succeed.
void write_file_atomic(const std::string& path, const std::function<void(const Node& root)>& fill,
                       const std::function<void(const std::string& temp)>& before_commit = {});

}  // namespace tqref::h5
