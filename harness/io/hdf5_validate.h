// The structural half of the untrusted-file policy for HDF5 inputs (docs/reliability.md,
// "Untrusted files"). Before tqref reads anything from an HDF5 file, one pass visits all of it:
// every link (hard links only: no soft, external or user-defined link), every object header,
// every attribute (values read as the readers read them), every dataset's creation properties
// (no virtual layout, no external raw storage, only the filters tqref writes: deflate, shuffle,
// fletcher32; chunks of at most 64 MiB) and every byte of its data (in bounded slabs, so the
// fletcher32 checksums and deflate streams are all verified). The pass runs in a child process
// that reports each object before touching it and is stopped when it makes no progress for
// kIdleTimeoutS: libhdf5's crashes, wild copies and endless loops on malformed metadata cost the
// child, and the message names the object it was reading. That the child survived says nothing
// about the same reads in tqref's own process: libhdf5 1.10 decodes some messages without bounds
// checks, and whether such a read crashes depends on the process's memory layout (finding 8,
// docs/reliability.md). So the child also copies the file (H5Ocopy, attributes value by value:
// libhdf5 decodes the source's metadata there and encodes the copy itself) into an in-memory file
// and sends its image; tqref's process reads only that copy, never metadata bytes from the
// untrusted file.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <functional>
#include <string>

#include "io/hdf5_util.h"
#include "io/input_file.h"

namespace tqref::h5 {

// A child that sends nothing for this long is stopped (a valid file sends a note per object and
// per 16 MiB of data).
inline constexpr double kIdleTimeoutS = 10.0;

// Visits the whole of `file` (opened read-only) as described above, calling note(object path)
// before each object, attribute and data slab. Returns "" or "<object>: <problem>". Two phases:
// the structure (links, object headers, attributes, each dataset's type, shape and storage),
// then the data (every byte of every number dataset, the costly part: a file of a few megabytes
// can declare gigabytes of zeros).
std::string walk_file(hid_t file, const std::function<void(const std::string&)>& note);

// Opens `path` with libhdf5, checks that it is the file `identity` names, walks it and copies it,
// in a child process (or in this process, see below); returns the copy of its root group, open
// read-only in memory. Throws h5::Error "<path>:<object>: <problem>" when the file breaks the
// policy or libhdf5 fails on it, or when the copy would not fit: twice `file_size` within the
// memory budget (checked first), the copy itself within copy_limit. With `check`, the reader's
// AttributeCheck runs between the walk's two phases; its refusal is thrown as h5::Error with its
// own message.
Handle open_validated(const std::string& path, const FileIdentity& identity, uint64_t file_size,
                      const AttributeCheck& check = {});

// The largest copy accepted from the child for a file of `file_size` bytes: its size and a
// quarter, plus 1 MiB (copies of real files are within 1 % of their size), and at most half the
// memory budget, since this process holds the copy twice. A copy past it comes from a corrupt
// file (finding 9, docs/reliability.md: a wild variable-length string copied out of a 19 KB
// trace made an image of gigabytes).
uint64_t copy_limit(uint64_t file_size);

// Fuzz targets only: walk in this process, so that the fuzzer explores the walk and the readers
// at full speed (libhdf5 findings then show as crashes); the isolation is fuzzed separately.
void set_validation_in_process(bool in_process);
// Fuzz triage only: the isolated child's idle deadline (default kIdleTimeoutS). scripts/fuzz.sh
// replays a campaign's saved inputs with the campaign's per-input timeout here, so that each of
// libhdf5's endless loops costs a replay seconds, not 10 s of a busy CPU.
void set_validation_idle_timeout(double seconds);

}  // namespace tqref::h5
