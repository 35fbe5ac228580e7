// The variant launches of level I (level_i.h), derived from a golden case on the host, and how
// each variant's outputs map back onto the baseline's. Pure data transformations: no backend.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "io/golden_case.h"
#include "judge/level_i.h"

namespace tqref::judge {

// Poison of everything a variant adds (stride padding, relocated or spare blocks): bf16 NaN
// 0x7FC1 for q/key/value padding (no bf16 conversion produces that payload), 0xFF for pool bytes
// (K: bf16 NaN 0xFFFF; V: code 0xFF and scale 0xFF, fp8 NaN, which dequantises to NaN).
inline constexpr uint16_t kVariantRowPoison = 0x7FC1;
inline constexpr uint8_t kVariantPoolPoison = 0xFF;

struct VariantLaunch {
  golden::GoldenCase c;  // the launch; expectations are its initial bytes (never compared)
  // Decoder: the baseline sequence that variant sequence i holds, or -1 (changed: not compared).
  std::vector<int32_t> seq_of;
  // Writer split-launch: launched after c on the pools c produced (its k_init/v_init replaced).
  std::optional<golden::GoldenCase> second;
  // Writer: c's V pool has another geometry (padded blocks); compared through repack_v_pool.
  bool v_repacked = false;
};

struct VariantBuilder {
  std::string property, name;
  std::function<VariantLaunch()> build;  // built when run, so one variant's pools live at a time
};

// Every variant of c, in the order of the header comment of level_i.h; none for a case with a
// pool of production size (its blocks sit at fixed physical ids).
std::vector<VariantBuilder> variant_builders(const golden::GoldenCase& c, const LevelIOptions& o);

// V pool `src` (geometry `from`) in geometry `to` (same heads, head_dim, block_size, num_blocks):
// each block's code section [0, B*n*b/8) and scale section [v_data_section, + B*n/16) moved to
// their places in `to`; every other byte taken from `background` (a pool of geometry `to`).
std::vector<uint8_t> repack_v_pool(const std::vector<uint8_t>& src, const CacheGeometry& from,
                                   const CacheGeometry& to, uint32_t bits,
                                   const std::vector<uint8_t>& background);
// Bytes outside the code and scale sections of every block (padding) where a and b differ.
uint64_t v_padding_differing(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                             const CacheGeometry& g, uint32_t bits);

// The decoder case with sequences `order` of c (order[i] = c's sequence at variant index i) and
// their lengths from `lens` (same size as order). Used by the placement variants and by the
// hypotheses (anatomy) to cut a large case down to a few sequences.
golden::GoldenCase select_sequences(const golden::GoldenCase& c, const std::vector<int32_t>& order,
                                    const std::vector<int32_t>& lens, const std::string& tag);

}  // namespace tqref::judge
