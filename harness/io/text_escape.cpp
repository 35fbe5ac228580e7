#include "io/text_escape.h"

#include <cstdint>
#include <cstdio>

namespace tqref {

namespace {

void hex(std::string& out, unsigned char c) {
  char b[5];
  std::snprintf(b, sizeof b, "\\x%02x", c);
  out += b;
}

// Length of the well-formed UTF-8 sequence of a printable character at s[i] (2..4), or 0.
size_t utf8_printable(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  const size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > s.size()) return 0;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (b(k) & 0x3F);
  }
  const uint32_t min = n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;  // overlong, surrogate
  if (cp <= 0x9F) return 0;  // C1 controls (CSI is U+009B)
  return n;
}

bool name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '+' || c == '-';
}

}  // namespace

std::string printable(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c >= 0x20 && c < 0x7F) || (keep_newlines && (c == '\n' || c == '\t'))) {
      out += char(c);
      ++i;
    } else if (const size_t n = c >= 0x80 ? utf8_printable(s, i) : 0; n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      hex(out, c);
      ++i;
    }
  }
  return out;
}

std::string name_problem(std::string_view s) {
  bool ok = !s.empty() && s.size() <= 200 && s[0] != '.';
  for (char c : s) ok = ok && name_char(c);
  if (ok) return "";
  return "'" + printable(s) + "'; allowed: 1 .. 200 characters from A-Z a-z 0-9 _ . + -, not starting with '.'";
}

std::string name_token(std::string_view s) {
  std::string r;
  for (char c : s.substr(0, 64)) r += name_char(c) ? c : '_';
  if (!r.empty() && r[0] == '.') r[0] = '_';
  return r.empty() ? "unnamed" : r;
}

}  // namespace tqref
