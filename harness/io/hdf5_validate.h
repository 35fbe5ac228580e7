// The structural half of the untrusted-file policy for HDF5 inputs (docs/reliability.md,
// "Untrusted files"). Before tqref reads anything from an HDF5 file, one pass visits all of it:
// every link (hard links only: no soft, external or user-defined link), every object header,
// every attribute (values read as the readers read them), every dataset's creation properties
// (no virtual layout, no external raw storage, only the filters tqref writes: deflate, shuffle,
// fletcher32; chunks of at most 64 MiB) and every byte of its data (in bounded slabs, so the
// fletcher32 checksums and deflate streams are all verified). The pass runs in a child process
// that reports each object before touching it and is stopped when it makes no progress for
// kIdleTimeoutS: libhdf5's crashes, wild copies and endless loops on malformed metadata cost the
// child, and the message names the object it was reading. libhdf5 is deterministic for the same
// bytes, so once the pass has touched every structure the readers will touch, the readers run in
// tqref's own process.
#pragma once
#include <hdf5.h>

#include <functional>
#include <string>

namespace tqref::h5 {

// A child that sends nothing for this long is stopped (a valid file sends a note per object and
// per 16 MiB of data).
inline constexpr double kIdleTimeoutS = 10.0;

// Visits the whole of `file` (opened read-only) as described above, calling note(object path)
// before each object, attribute and data slab. Returns "" or "<object>: <problem>".
std::string walk_file(hid_t file, const std::function<void(const std::string&)>& note);

// Opens `path` with libhdf5 and walks it in a child process (or in this process, see below);
// throws h5::Error "<path>:<object>: <problem>" when the file breaks the policy or libhdf5
// fails on it.
void validate_file(const std::string& path);

// Fuzz targets only: walk in this process, so that the fuzzer explores the walk and the readers
// at full speed (libhdf5 findings then show as crashes); the isolation is fuzzed separately.
void set_validation_in_process(bool in_process);
// Fuzz triage only: the isolated child's idle deadline (default kIdleTimeoutS). scripts/fuzz.sh
// replays a campaign's saved inputs with the campaign's per-input timeout here, so that each of
// libhdf5's endless loops costs a replay seconds, not 10 s of a busy CPU.
void set_validation_idle_timeout(double seconds);

}  // namespace tqref::h5
