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
// Objects that live outside the file or are not hard links (the untrusted-file policy of
// harness/io/hdf5_validate.h refuses each): dataset `obj` replaced by an external link to
// `target_obj` in `target_file`, a soft link to `target_obj` in the same file, a user-defined link,
// a dataset of the same dtype and shape whose raw data is the first bytes of `external`, a
// virtual dataset mapping `source_obj` of `source_file`, or a chunked copy through the
// scale-offset filter (built into libhdf5, never written by tqref).
void replace_with_external_link(const fs::path& file, const std::string& obj, const fs::path& target_file,
                                const std::string& target_obj);
void replace_with_soft_link(const fs::path& file, const std::string& obj, const std::string& target_obj);
void replace_with_user_defined_link(const fs::path& file, const std::string& obj);
void replace_with_external_storage(const fs::path& file, const std::string& obj, const fs::path& external);
void replace_with_virtual(const fs::path& file, const std::string& obj, const fs::path& source_file,
                          const std::string& source_obj);
void replace_with_scaleoffset(const fs::path& file, const std::string& obj);
// The byte at `offset` into the stored data of dataset `obj` (its first chunk) XOR 0x01.
void flip_stored_byte(const fs::path& file, const std::string& obj, uint64_t offset);
// Number attributes of a type tqref never writes, as a damaged file's metadata could claim: an
// 8-byte integer using only `precision` of its bits, or a binary64 layout with exponent bias
// `ebias` (standard: 1023). HDF5's API allows both.
void set_narrow_int_attr(const fs::path& file, const std::string& obj, const std::string& name, int64_t v,
                         size_t precision);
void set_rebiased_double_attr(const fs::path& file, const std::string& obj, const std::string& name, double v,
                              size_t ebias);
// An unsigned 64-bit integer attribute.
void set_uint64_attr(const fs::path& file, const std::string& obj, const std::string& name, uint64_t v);
// Renames (moves) link `from` to `to` in the same file.
void rename_link(const fs::path& file, const std::string& from, const std::string& to);
// Dataset `obj` replaced by a uint16 dataset of `shape` whose chunks (of `chunk` elements along
// the first axis, deflate level 9 only) all hold zeros, written as precompressed chunks: gigabytes of
// data in a file of a few megabytes, in well under a second.
void write_zero_dataset(const fs::path& file, const std::string& obj, const std::vector<uint64_t>& shape,
                        uint64_t chunk_rows);

// Replaces dataset `obj` by one of element type T and the given shape holding `data`.
template <class T>
void rewrite_dataset(const fs::path& file, const std::string& obj, const std::vector<T>& data,
                     const std::vector<uint64_t>& shape);
// Reads dataset `obj` as T, lets `edit` change the values (same count), writes it back in place.
template <class T>
void edit_dataset(const fs::path& file, const std::string& obj,
                  const std::function<void(std::vector<T>&)>& edit);

}  // namespace tqref::badfiles
