#include "io/file_bytes.h"

#include <fstream>
#include <stdexcept>

namespace tqref {

std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::invalid_argument(what + " " + path + ": cannot open");
  std::streamoff n = f.tellg();
  if (n < 0) throw std::invalid_argument(what + " " + path + ": cannot determine size");
  std::vector<uint8_t> bytes(static_cast<size_t>(n));
  f.seekg(0);
  if (n > 0 && !f.read(reinterpret_cast<char*>(bytes.data()), n))
    throw std::invalid_argument(what + " " + path + ": read failed");
  return bytes;
}

}  // namespace tqref
