// Makes bad golden files for tests/test_bad_input.cpp: copies of a valid file with one defect
// each, written through the HDF5 C API (attributes changed or deleted, datasets deleted or
// rewritten with another dtype, shape or content) or at the byte level (truncated, flipped,
// empty). Every mutator works on a copy; the valid file is never touched.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "io/hdf5_util.h"

namespace tqref::badfiles {

namespace fs = std::filesystem;

// The first case of each kind in a golden file ("" when none).
struct CaseNames {
  std::string writer, decode;
};
CaseNames find_cases(const std::string& file);

// Byte-level defects.
void truncate_copy(const fs::path& from, const fs::path& to, double keep_fraction);
void flip_bytes(const fs::path& file, uint64_t offset, uint64_t count);  // xor 0xFF

// Object-level defects; `obj` is a path inside the file, e.g. "/cases/0000_writer.../inputs/key".
void set_int_attr(const fs::path& file, const std::string& obj, const std::string& name, int64_t v);
void set_string_attr(const fs::path& file, const std::string& obj, const std::string& name,
                     const std::string& v);
void set_double_attr(const fs::path& file, const std::string& obj, const std::string& name, double v);
void delete_attr(const fs::path& file, const std::string& obj, const std::string& name);
void delete_link(const fs::path& file, const std::string& obj);
// Replaces dataset `obj` by one of element type T and the given shape holding `data`.
template <class T>
void rewrite_dataset(const fs::path& file, const std::string& obj, const std::vector<T>& data,
                     const std::vector<uint64_t>& shape);
// Reads dataset `obj` as T, lets `edit` change the values (same count), writes it back in place.
template <class T>
void edit_dataset(const fs::path& file, const std::string& obj,
                  const std::function<void(std::vector<T>&)>& edit);

}  // namespace tqref::badfiles
