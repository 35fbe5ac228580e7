// The llama2.c tokenizer ("tokenizer.bin") and its sentencepiece-style BPE encoder.
//
// File layout (little-endian): int32 max_token_length, then for each of vocab_size tokens:
// fp32 score, int32 len, len bytes (the piece; sentencepiece's U+2581 is already a space).
// Ids 0, 1, 2 are <unk>, BOS, EOS; ids 3..258 are the byte-fallback tokens for bytes 0x00..0xFF
// (stored as the UTF-8 of code point U+00bb, so bytes >= 0x80 take two bytes on disk).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tqref::trace {

constexpr int kTokUnk = 0, kTokBos = 1, kTokEos = 2, kTokByte0 = 3;

class Tokenizer {
 public:
  // Reads and validates: max length >= 1, each len in 1..max_token_length, scores finite, exactly
  // `vocab_size` tokens and no trailing bytes, ids 3..258 being the byte tokens. Throws
  // std::invalid_argument naming the file, the token index and the byte offset.
  static Tokenizer load(const std::string& path, int vocab_size);

  // BOS (when `bos`), then the BPE of " " + text: each UTF-8 character becomes its piece when the
  // vocabulary has one and its bytes' fallback tokens otherwise; then, repeatedly, the adjacent
  // pair whose concatenation is a piece with the highest score (leftmost on ties) is merged.
  // Empty text gives only BOS. Byte-fallback tokens never take part in a lookup (as sentencepiece).
  std::vector<int> encode(const std::string& text, bool bos) const;

  // Bytes of token `id` as it follows `prev`: the leading space of a piece right after BOS is
  // dropped (the encoder added it); byte tokens give their raw byte; BOS/EOS/<unk> give "".
  std::string piece_text(int prev, int id) const;
  std::string decode(const std::vector<int>& ids, int prev) const;

  int vocab_size() const { return int(pieces_.size()); }
  const std::string& piece(int id) const { return pieces_.at(size_t(id)); }
  float score(int id) const { return scores_.at(size_t(id)); }
  const std::string& path() const { return path_; }
  const std::string& sha256() const { return sha256_; }

 private:
  std::string path_, sha256_;
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int> lookup_;  // piece -> id, byte tokens excluded
  int lookup(const std::string& s) const;
};

}  // namespace tqref::trace
