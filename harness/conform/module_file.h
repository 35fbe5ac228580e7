// Kernel module files given to `tqref conform --modules`: finding them (files and directories)
// and a static look inside each one, without a GPU. The look is a PRE-CHECK: it reads the
// entry points a file declares (PTX `.entry` lines; the ELF symbol table of a cubin; the PTX and
// ELF images inside a fatbin) and the architectures it was built for, so that a run without a
// GPU, or a module the GPU refuses, can still say what the file holds. The authoritative lookup
// is cuModuleGetFunction on the GPU (harness/gpu/conform_run.cpp).
#pragma once
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace tqref::conform {

enum class ModuleKind { cubin, ptx, fatbin };
const char* module_kind_name(ModuleKind k);

struct ModuleFile {
  std::string path;  // as given, or directory + "/" + name for files found in a directory
  ModuleKind kind = ModuleKind::cubin;
};

// A path that is neither a module file nor a directory (message names the path and the allowed
// suffixes).
struct ModulePathError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Files are taken by suffix (.cubin, .ptx, .fatbin); a file with another suffix given by name is
// an error, one met inside a directory is ignored. Directories are scanned recursively, entries
// in name order, so reports list modules in a stable order. Duplicates (same canonical path) are
// kept once. Throws ModulePathError for a path that does not exist or a named file of another
// suffix.
std::vector<ModuleFile> scan_module_paths(const std::vector<std::string>& paths);

// The six entry points of the contract (docs/spec.md sections 4 and 5), writers first.
const std::vector<std::string>& contract_kernels();
bool is_decoder_kernel(const std::string& name);

// One code image: "sm_90" (SASS) or "compute_121" (PTX), as the file states it.
struct ImageTarget {
  bool ptx = false;
  uint32_t sm = 0;        // 90, 121, ... (0 = not read)
  std::string suffix;     // PTX `.target sm_121f` -> "f"; "" otherwise
  bool compressed = false;  // fatbin entry stored compressed: its names were not read
  std::string label() const;  // "sm_121 SASS", "compute_121f PTX", "sm_90 SASS (compressed)"
};

struct ModuleInspection {
  std::vector<ImageTarget> targets;
  std::set<std::string> entries;  // every .entry / STT_FUNC global name read (all, not only ours)
  std::string problem;            // non-empty: the file could not be parsed (the GPU may still load it)
  // True when every image was read, so a contract kernel absent from `entries` is absent.
  bool complete = false;
  std::string targets_text() const;  // "sm_90 SASS, compute_90 PTX" or "unknown"
};

ModuleInspection inspect_module_bytes(const std::vector<uint8_t>& bytes, ModuleKind kind);
ModuleInspection inspect_module_file(const ModuleFile& f);

// "sm_90" etc. of a device's compute capability, and whether an image of target t can run on a
// device of architecture `sm` (a cubin needs the same major and a minor at or below the device's
// within the family for plain targets; PTX needs its target at or below the device's, and the
// 'a' suffix pins the exact architecture, 'f' the family). Used to explain load failures only;
// the driver decides.
bool image_may_load(const ImageTarget& t, uint32_t device_sm);
// "built for sm_121 (sm_121 SASS, compute_121f PTX), this GPU is sm_90" style explanation, or ""
// when some image of the module should load on the device.
std::string load_mismatch(const ModuleInspection& m, uint32_t device_sm);

}  // namespace tqref::conform
