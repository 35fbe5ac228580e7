// The structural half of the untrusted-file policy for HDF5 inputs (docs/reliability.md,
// "Untrusted files"). Before tqref reads anything from an HDF5 file, one pass visits its whole
// structure: every link (hard links only: no soft, external or user-defined link), every object
// header, every attribute (values read as the readers read them), every dataset's creation
// properties (no virtual layout, no external raw storage, only the filters tqref writes: deflate,
// shuffle, fletcher32; chunks of at most 64 MiB) and every chunk's entry in its chunk index
// (inside the file, no larger than its chunk). It reads no data: its cost is the metadata's, not
// the file's. The pass runs in a child process that reports each object before touching it and
// is stopped when it makes no progress for kIdleTimeoutS: libhdf5's crashes, wild copies and
// endless loops on malformed metadata cost the child, and the message names the object it was
// reading. The child sends a description of what it accepted (hdf5_description.h); tqref's
// process reads attribute values from it and data with pread, decoding chunks itself
// (described_file.h, chunk_decoder.h). libhdf5 never decodes the untrusted file's metadata in
// tqref's process: that the child survived a read says nothing about the same read there (libhdf5
// 1.10 decodes some messages without bounds checks, and whether such a read crashes depends on
// the process's memory layout: finding 8, docs/reliability.md).
#pragma once
#include <cstdint>
#include <string>

#include "io/hdf5_description.h"
#include "io/input_file.h"

namespace tqref::h5 {

// A child that sends nothing for this long is stopped (a valid file sends a note per object and
// per attribute).
inline constexpr double kIdleTimeoutS = 10.0;

// Opens `path` with libhdf5 in a child process (or in this process, see below), checks that it is
// the file `identity` names, walks it and returns its description. Throws h5::Error
// "<path>:<object>: <problem>" when the file breaks the policy, libhdf5 fails on it, or the
// description is inconsistent or larger than description_limit.
FileDescription describe_validated(const std::string& path, const FileIdentity& identity, uint64_t file_size);

// The largest description accepted from the child for a file of `file_size` bytes: 16 times its
// size (an integer attribute of one byte is described in 16) plus 128 MiB (4M chunk entries of
// 20 bytes and the attributes of a small file), and at most half the memory budget. A larger one
// comes from a corrupt file (finding 9, docs/reliability.md: a corrupt global heap made a string
// attribute of a 19 KB trace gigabytes).
uint64_t description_limit(uint64_t file_size);

// Fuzz targets only: walk in this process, so that the fuzzer explores the walk and the readers
// at full speed (libhdf5 findings then show as crashes); the isolation is fuzzed separately.
void set_validation_in_process(bool in_process);
// Fuzz triage only: the isolated child's idle deadline (default kIdleTimeoutS). scripts/fuzz.sh
// replays a campaign's saved inputs with the campaign's per-input timeout here, so that each of
// libhdf5's endless loops costs a replay seconds, not 10 s of a busy CPU.
void set_validation_idle_timeout(double seconds);

}  // namespace tqref::h5
