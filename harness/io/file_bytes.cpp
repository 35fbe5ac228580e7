#include "io/file_bytes.h"

#include <cstring>

#include "io/input_file.h"
#include "io/memory_budget.h"

namespace tqref {

std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what) {
  const InputFile in(path, what);  // a regular file (no FIFO, no device)
  if (const std::string why = over_budget(in.size(), what + " " + path); !why.empty()) throw InputError(why);
  const std::string s = in.read_all(memory_budget());
  std::vector<uint8_t> bytes(s.size());
  if (!s.empty()) std::memcpy(bytes.data(), s.data(), s.size());
  return bytes;
}

}  // namespace tqref
