// An untrusted HDF5 file as tqref's process reads it (docs/reliability.md, "Untrusted files"): the
// description the validating child made of its structure (hdf5_description.h) and the descriptor
// the parent checked (input_file.h; the child checked that it opened the same inode). Data are
// read with pread and decoded here (chunk_decoder.h), chunks in parallel; libhdf5 is not called.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "io/hdf5_description.h"
#include "io/input_file.h"

namespace tqref::h5 {

// Whether `file` holds HDF5's 8-byte signature where libhdf5 looks for it (H5Fis_hdf5: at offset
// 0, then 512, 1024, 2048, ...), read here so that libhdf5 does not open the file in this process.
bool has_hdf5_signature(const InputFile& file);

struct DescribedFile {
  std::string path;
  std::unique_ptr<InputFile> file;
  FileDescription desc;
};

// Reads every element of `d` into `out` (its element count times d.elem bytes), in the file's
// byte order, unallocated storage as the fill value. Throws h5::Error "<where>: corrupt file: the
// data cannot be read (...)" for a chunk that is truncated, fails its checksum, or does not
// decode to its size. The caller has checked the size against the memory budget.
void read_dataset_bytes(const DescribedFile& f, const DatasetDesc& d, const std::string& where, uint8_t* out);

// Checks every stored chunk of `d` as read_dataset_bytes would read it, keeping nothing: where the
// pipeline has fletcher32, each chunk's checksum over its stored bytes (no inflating); otherwise
// each chunk decoded into a scratch buffer. Throws as read_dataset_bytes does.
void verify_dataset_bytes(const DescribedFile& f, const DatasetDesc& d, const std::string& where);

}  // namespace tqref::h5
