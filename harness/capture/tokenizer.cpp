#include "capture/tokenizer.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "capture/checkpoint.h"
#include "io/file_bytes.h"
#include "io/sha256.h"

namespace tqref::trace {

namespace {

// UTF-8 of code point c (c < 0x800 here: byte tokens are U+0000..U+00FF).
std::string utf8_of_latin1(unsigned c) {
  if (c < 0x80) return std::string(1, char(c));
  return std::string{char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))};
}

// Length of the UTF-8 character starting with byte b (1 for stray continuation or invalid bytes,
// so malformed text still encodes, byte by byte, through the fallback).
size_t utf8_len(unsigned char b) {
  if (b >= 0xF0 && b < 0xF8) return 4;
  if (b >= 0xE0) return b < 0xF0 ? 3 : 1;
  if (b >= 0xC0) return 2;
  return 1;
}

}  // namespace

Tokenizer Tokenizer::load(const std::string& path, int vocab_size) {
  std::string where = "tokenizer " + path;
  std::vector<uint8_t> b = read_file_bytes(path, "tokenizer");
  size_t off = 0;
  auto need = [&](size_t n, int tok) {
    if (b.size() - off < n)
      throw std::invalid_argument(where + ": truncated at byte " + std::to_string(off) +
                                  " while reading token " + std::to_string(tok) + " of " +
                                  std::to_string(vocab_size) + " (size from the checkpoint header)");
  };
  need(4, -1);
  int32_t max_len;
  std::memcpy(&max_len, b.data(), 4);
  off = 4;
  if (max_len < 1 || max_len > 4096)
    throw std::invalid_argument(where + ": max_token_length = " + std::to_string(max_len) +
                                "; allowed 1..4096");
  Tokenizer t;
  t.path_ = path;
  t.sha256_ = sha256_hex(b.data(), b.size());
  t.pieces_.reserve(size_t(vocab_size));
  t.scores_.reserve(size_t(vocab_size));
  for (int i = 0; i < vocab_size; ++i) {
    need(8, i);
    float score;
    int32_t len;
    std::memcpy(&score, b.data() + off, 4);
    std::memcpy(&len, b.data() + off + 4, 4);
    if (!std::isfinite(score))
      throw std::invalid_argument(where + ": token " + std::to_string(i) + " at byte " +
                                  std::to_string(off) + " has a non-finite score");
    if (len < 1 || len > max_len)
      throw std::invalid_argument(where + ": token " + std::to_string(i) + " at byte " +
                                  std::to_string(off) + " has length " + std::to_string(len) +
                                  "; allowed 1..max_token_length (" + std::to_string(max_len) + ")");
    off += 8;
    need(size_t(len), i);
    t.pieces_.emplace_back(reinterpret_cast<const char*>(b.data() + off), size_t(len));
    t.scores_.push_back(score);
    off += size_t(len);
  }
  if (off != b.size())
    throw std::invalid_argument(where + ": " + std::to_string(b.size() - off) +
                                " trailing bytes after token " + std::to_string(vocab_size - 1) +
                                " (vocab_size from the checkpoint header is " +
                                std::to_string(vocab_size) + "; wrong tokenizer?)");
  for (unsigned byte = 0; byte < 256; ++byte)
    if (t.pieces_[kTokByte0 + byte] != utf8_of_latin1(byte))
      throw std::invalid_argument(where + ": token " + std::to_string(kTokByte0 + byte) +
                                  " is not the byte-fallback token for byte " +
                                  std::to_string(byte) + "; ids 3..258 must be bytes 0x00..0xFF");
  // First id wins for a repeated piece; byte tokens are excluded (sentencepiece only uses them
  // for characters that have no piece).
  for (int i = 0; i < vocab_size; ++i)
    if (i < kTokByte0 || i >= kTokByte0 + 256) t.lookup_.emplace(t.pieces_[size_t(i)], i);
  return t;
}

int Tokenizer::lookup(const std::string& s) const {
  auto it = lookup_.find(s);
  return it == lookup_.end() ? -1 : it->second;
}

std::vector<int> Tokenizer::encode(const std::string& text, bool bos) const {
  std::vector<int> ids;
  if (bos) ids.push_back(kTokBos);
  if (text.empty()) return ids;
  std::string s = " " + text;
  std::vector<int> toks;
  for (size_t i = 0; i < s.size();) {
    size_t n = std::min(utf8_len(static_cast<unsigned char>(s[i])), s.size() - i);
    int id = lookup(s.substr(i, n));
    if (id >= 0) {
      toks.push_back(id);
    } else {
      for (size_t k = 0; k < n; ++k) toks.push_back(kTokByte0 + static_cast<unsigned char>(s[i + k]));
    }
    i += n;
  }
  for (;;) {
    float best = -INFINITY;
    int best_id = -1;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < toks.size(); ++i) {
      int id = lookup(pieces_[size_t(toks[i])] + pieces_[size_t(toks[i + 1])]);
      // Byte tokens' pieces are not their bytes for >= 0x80, so they never merge.
      bool bytes = (toks[i] >= kTokByte0 && toks[i] < kTokByte0 + 256) ||
                   (toks[i + 1] >= kTokByte0 && toks[i + 1] < kTokByte0 + 256);
      if (id >= 0 && !bytes && scores_[size_t(id)] > best) {
        best = scores_[size_t(id)];
        best_id = id;
        best_at = i;
      }
    }
    if (best_id < 0) break;
    toks[best_at] = best_id;
    toks.erase(toks.begin() + std::ptrdiff_t(best_at) + 1);
  }
  ids.insert(ids.end(), toks.begin(), toks.end());
  return ids;
}

std::string Tokenizer::piece_text(int prev, int id) const {
  if (id < 0 || id >= vocab_size())
    throw std::out_of_range("token id " + std::to_string(id) + " outside 0.." +
                            std::to_string(vocab_size() - 1));
  if (id == kTokUnk || id == kTokBos || id == kTokEos) return "";
  if (id >= kTokByte0 && id < kTokByte0 + 256) return std::string(1, char(id - kTokByte0));
  const std::string& p = pieces_[size_t(id)];
  if (prev == kTokBos && !p.empty() && p[0] == ' ') return p.substr(1);
  return p;
}

std::string Tokenizer::decode(const std::vector<int>& ids, int prev) const {
  std::string out;
  for (int id : ids) {
    out += piece_text(prev, id);
    prev = id;
  }
  return out;
}

}  // namespace tqref::trace
