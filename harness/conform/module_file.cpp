#include "conform/module_file.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "io/file_bytes.h"
#include "io/text_escape.h"

namespace fs = std::filesystem;

namespace tqref::conform {

namespace {

bool suffix_kind(const fs::path& p, ModuleKind* k) {
  const std::string ext = p.extension().string();
  if (ext == ".cubin") *k = ModuleKind::cubin;
  else if (ext == ".ptx") *k = ModuleKind::ptx;
  else if (ext == ".fatbin") *k = ModuleKind::fatbin;
  else return false;
  return true;
}

// Little-endian reads with bounds: a truncated or foreign file gives `false`, never a crash.
struct Reader {
  const uint8_t* p;
  size_t n;
  bool u16(size_t off, uint32_t* v) const {
    if (off + 2 > n) return false;
    *v = uint32_t(p[off]) | uint32_t(p[off + 1]) << 8;
    return true;
  }
  bool u32(size_t off, uint32_t* v) const {
    if (off + 4 > n) return false;
    *v = uint32_t(p[off]) | uint32_t(p[off + 1]) << 8 | uint32_t(p[off + 2]) << 16 |
         uint32_t(p[off + 3]) << 24;
    return true;
  }
  bool u64(size_t off, uint64_t* v) const {
    uint32_t lo, hi;
    if (!u32(off, &lo) || !u32(off + 4, &hi)) return false;
    *v = uint64_t(hi) << 32 | lo;
    return true;
  }
};

// PTX text: `.target sm_121f` and every `.entry NAME` (with or without `.visible`).
void read_ptx(const char* text, size_t n, ModuleInspection* m) {
  const std::string s(text, strnlen(text, n));
  ImageTarget t;
  t.ptx = true;
  const size_t tp = s.find(".target");
  if (tp != std::string::npos) {
    size_t i = s.find("sm_", tp);
    const size_t eol = s.find('\n', tp);
    if (i != std::string::npos && i < eol) {
      i += 3;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) t.sm = t.sm * 10 + (s[i++] - '0');
      while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) t.suffix += s[i++];
    }
  }
  m->targets.push_back(t);
  for (size_t at = s.find(".entry"); at != std::string::npos; at = s.find(".entry", at + 6)) {
    size_t i = at + 6;
    if (i >= s.size() || !std::isspace(static_cast<unsigned char>(s[i]))) continue;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '$')) ++j;
    if (j > i) m->entries.insert(s.substr(i, j - i));
  }
}

// CUDA ELF (cubin): the SM from e_flags, kernel names from .symtab (global STT_FUNC symbols).
// e_flags holds the SM in bits 8..15 from ELF ABI version 8 (CUDA 12.8+; sm_90 -> 0x5a00), in
// bits 0..7 before.
bool read_elf(const uint8_t* p, size_t n, ModuleInspection* m, std::string* problem) {
  const Reader r{p, n};
  if (n < 64 || std::memcmp(p, "\x7f" "ELF", 4) != 0 || p[4] != 2 || p[5] != 1) {
    *problem = "not a 64-bit little-endian ELF file";
    return false;
  }
  uint32_t flags = 0, shentsize = 0, shnum = 0;
  uint64_t shoff = 0;
  r.u32(48, &flags);
  r.u64(40, &shoff);
  r.u16(58, &shentsize);
  r.u16(60, &shnum);
  ImageTarget t;
  t.sm = p[8] >= 8 ? (flags >> 8) & 0xFF : flags & 0xFF;
  m->targets.push_back(t);
  if (shentsize < 64 || shoff >= n) {
    *problem = "ELF section table missing or out of the file";
    return false;
  }
  for (uint32_t i = 0; i < shnum; ++i) {
    const size_t sh = shoff + size_t(i) * shentsize;
    uint32_t type = 0, link = 0;
    uint64_t off = 0, size = 0, entsize = 0;
    if (!r.u32(sh + 4, &type) || !r.u64(sh + 24, &off) || !r.u64(sh + 32, &size) ||
        !r.u32(sh + 40, &link) || !r.u64(sh + 56, &entsize)) {
      *problem = "ELF section header " + std::to_string(i) + " truncated";
      return false;
    }
    if (type != 2 /* SHT_SYMTAB */) continue;
    uint64_t str_off = 0, str_size = 0;
    const size_t lsh = shoff + size_t(link) * shentsize;
    if (link >= shnum || !r.u64(lsh + 24, &str_off) || !r.u64(lsh + 32, &str_size) ||
        str_off + str_size > n || off + size > n || entsize < 24) {
      *problem = "ELF symbol table or its string table out of the file";
      return false;
    }
    for (uint64_t s = off; s + 24 <= off + size; s += entsize) {
      uint32_t name = 0;
      r.u32(s, &name);
      const uint8_t info = p[s + 4];
      if ((info & 0xF) != 2 /* STT_FUNC */ || (info >> 4) != 1 /* STB_GLOBAL */) continue;
      if (name >= str_size) continue;
      const char* c = reinterpret_cast<const char*>(p + str_off + name);
      // Symbol names come from the module's bytes: escaped before they reach a report.
      m->entries.insert(printable(std::string_view(c, strnlen(c, str_size - name))));
    }
  }
  return true;
}

// Fatbin container: a 16-byte header (magic 0xBA55ED50, version, header size, payload size)
// followed by entries, each with its own header: kind (1 = PTX, 2 = ELF) at +0, header size at
// +4, payload size at +8, flags at +40 (0x2000 / 0x8000: payload compressed), SM at +28.
bool read_fatbin(const uint8_t* p, size_t n, ModuleInspection* m, std::string* problem) {
  const Reader r{p, n};
  uint32_t magic = 0, hsize = 0;
  uint64_t fsize = 0;
  if (!r.u32(0, &magic) || magic != 0xBA55ED50u || !r.u16(6, &hsize) || !r.u64(8, &fsize)) {
    *problem = "not a fatbin (magic 0xBA55ED50 missing)";
    return false;
  }
  bool all_read = true;
  const size_t end = std::min<uint64_t>(n, hsize + fsize);
  for (size_t off = hsize; off + 16 <= end;) {
    uint32_t kind = 0, ehs = 0, sm = 0, flags = 0;
    uint64_t size = 0;
    if (!r.u16(off, &kind) || !r.u32(off + 4, &ehs) || !r.u64(off + 8, &size) ||
        !r.u32(off + 28, &sm) || !r.u32(off + 40, &flags) || ehs < 32 || off + ehs + size > n) {
      *problem = "fatbin entry at byte " + std::to_string(off) + " truncated";
      return false;
    }
    const uint8_t* payload = p + off + ehs;
    const bool compressed = (flags & 0xA000u) != 0;
    if (compressed) {
      ImageTarget t;
      t.ptx = kind == 1;
      t.sm = sm;
      t.compressed = true;
      m->targets.push_back(t);
      all_read = false;
    } else if (kind == 1) {
      read_ptx(reinterpret_cast<const char*>(payload), size, m);
      if (m->targets.back().sm == 0) m->targets.back().sm = sm;
    } else if (kind == 2) {
      std::string why;
      if (!read_elf(payload, size, m, &why)) {
        *problem = "fatbin ELF entry at byte " + std::to_string(off) + ": " + why;
        return false;
      }
    } else {
      all_read = false;
    }
    off += ehs + size;
  }
  return all_read;
}

}  // namespace

const char* module_kind_name(ModuleKind k) {
  switch (k) {
    case ModuleKind::cubin: return "cubin";
    case ModuleKind::ptx: return "PTX";
    case ModuleKind::fatbin: return "fatbin";
  }
  return "?";
}

std::vector<ModuleFile> scan_module_paths(const std::vector<std::string>& paths) {
  std::vector<ModuleFile> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& p, ModuleKind k) {
    std::error_code ec;
    const std::string key = fs::weakly_canonical(p, ec).string();
    if (seen.insert(ec ? p.string() : key).second) out.push_back({p.string(), k});
  };
  for (const std::string& s : paths) {
    const fs::path p(s);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> found;
      for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        ModuleKind k;
        if (it->is_regular_file(ec) && suffix_kind(it->path(), &k)) found.push_back(it->path());
      }
      if (ec) throw ModulePathError("--modules " + s + ": cannot read the directory: " + ec.message());
      std::sort(found.begin(), found.end());
      for (const auto& f : found) {
        ModuleKind k;
        suffix_kind(f, &k);
        add(f, k);
      }
    } else if (fs::is_regular_file(p, ec)) {
      ModuleKind k;
      if (!suffix_kind(p, &k))
        throw ModulePathError("--modules " + s + ": not a kernel module file; allowed suffixes: "
                              ".cubin, .ptx, .fatbin (or a directory holding such files)");
      add(p, k);
    } else {
      throw ModulePathError("--modules " + s + ": no such file or directory");
    }
  }
  return out;
}

const std::vector<std::string>& contract_kernels() {
  static const std::vector<std::string> k = {
      "reshape_and_cache_flash_bf16k_turbo2v", "reshape_and_cache_flash_bf16k_turbo3v",
      "reshape_and_cache_flash_bf16k_turbo4v", "paged_decode_attn_bf16k_turbo2v",
      "paged_decode_attn_bf16k_turbo3v",       "paged_decode_attn_bf16k_turbo4v"};
  return k;
}

bool is_decoder_kernel(const std::string& name) { return name.rfind("paged_decode_attn_", 0) == 0; }

std::string ImageTarget::label() const {
  std::string s = (ptx ? "compute_" : "sm_") + (sm ? std::to_string(sm) : std::string("?")) + suffix +
                  (ptx ? " PTX" : " SASS");
  return compressed ? s + " (compressed)" : s;
}

std::string ModuleInspection::targets_text() const {
  std::string s;
  for (const auto& t : targets) s += (s.empty() ? "" : ", ") + t.label();
  return s.empty() ? "unknown" : s;
}

ModuleInspection inspect_module_bytes(const std::vector<uint8_t>& bytes, ModuleKind kind) {
  ModuleInspection m;
  std::string problem;
  bool ok = false;
  switch (kind) {
    case ModuleKind::ptx:
      read_ptx(reinterpret_cast<const char*>(bytes.data()), bytes.size(), &m);
      ok = m.targets.back().sm != 0;
      if (!ok) problem = "no `.target sm_XX` line: not PTX?";
      break;
    case ModuleKind::cubin: ok = read_elf(bytes.data(), bytes.size(), &m, &problem); break;
    case ModuleKind::fatbin: ok = read_fatbin(bytes.data(), bytes.size(), &m, &problem); break;
  }
  m.problem = problem;
  m.complete = ok && problem.empty();
  return m;
}

ModuleInspection inspect_module_file(const ModuleFile& f) {
  try {
    return inspect_module_bytes(read_file_bytes(f.path, "module"), f.kind);
  } catch (const std::invalid_argument& e) {  // not a regular file, too large, unreadable
    ModuleInspection m;
    m.problem = e.what();
    return m;
  }
}

bool image_may_load(const ImageTarget& t, uint32_t device_sm) {
  if (t.sm == 0) return true;  // unknown: let the driver decide
  const uint32_t tmaj = t.sm / 10, dmaj = device_sm / 10;
  if (t.suffix == "a") return t.sm == device_sm;
  if (t.suffix == "f") return tmaj == dmaj && t.sm <= device_sm;
  if (t.ptx) return t.sm <= device_sm;
  return tmaj == dmaj && t.sm <= device_sm;
}

std::string load_mismatch(const ModuleInspection& m, uint32_t device_sm) {
  if (m.targets.empty()) return "";
  std::set<std::string> built;
  for (const auto& t : m.targets) {
    if (image_may_load(t, device_sm)) return "";
    built.insert("sm_" + std::to_string(t.sm) + t.suffix);
  }
  std::string b;
  for (const auto& s : built) b += (b.empty() ? "" : " and ") + s;
  return "built for " + b + " (" + m.targets_text() + "), this GPU is sm_" + std::to_string(device_sm);
}

}  // namespace tqref::conform
