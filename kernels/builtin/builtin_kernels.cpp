// Name -> bytes lookup for the fatbins that kernels/CMakeLists.txt embeds (embed_binary.cmake
// generates one tqref_fatbin_<module>[] array per module).
#include "tqref/builtin_kernels.h"

#include <cstddef>

extern const unsigned char tqref_fatbin_writers[];
extern const std::size_t tqref_fatbin_writers_size;
extern const unsigned char tqref_fatbin_decode_hdim128[];
extern const std::size_t tqref_fatbin_decode_hdim128_size;
extern const unsigned char tqref_fatbin_decode_hdim256[];
extern const std::size_t tqref_fatbin_decode_hdim256_size;
extern const unsigned char tqref_fatbin_ex2_probe[];
extern const std::size_t tqref_fatbin_ex2_probe_size;
extern const unsigned char tqref_fatbin_decode_fast_hdim128[];
extern const std::size_t tqref_fatbin_decode_fast_hdim128_size;
extern const unsigned char tqref_fatbin_decode_fast_hdim256[];
extern const std::size_t tqref_fatbin_decode_fast_hdim256_size;
extern const unsigned char tqref_fatbin_decode_floor_hdim128[];
extern const std::size_t tqref_fatbin_decode_floor_hdim128_size;
extern const unsigned char tqref_fatbin_decode_floor_hdim256[];
extern const std::size_t tqref_fatbin_decode_floor_hdim256_size;
extern const unsigned char tqref_fatbin_bench_util[];
extern const std::size_t tqref_fatbin_bench_util_size;
extern const unsigned char tqref_fatbin_writers_fast[];
extern const std::size_t tqref_fatbin_writers_fast_size;

namespace tqref::kernels {

std::span<const unsigned char> builtin_fatbin(std::string_view name) {
  if (name == "writers") return {tqref_fatbin_writers, tqref_fatbin_writers_size};
  if (name == "decode_hdim128") return {tqref_fatbin_decode_hdim128, tqref_fatbin_decode_hdim128_size};
  if (name == "decode_hdim256") return {tqref_fatbin_decode_hdim256, tqref_fatbin_decode_hdim256_size};
  if (name == "ex2_probe") return {tqref_fatbin_ex2_probe, tqref_fatbin_ex2_probe_size};
  if (name == "decode_fast_hdim128")
    return {tqref_fatbin_decode_fast_hdim128, tqref_fatbin_decode_fast_hdim128_size};
  if (name == "decode_fast_hdim256")
    return {tqref_fatbin_decode_fast_hdim256, tqref_fatbin_decode_fast_hdim256_size};
  if (name == "decode_floor_hdim128")
    return {tqref_fatbin_decode_floor_hdim128, tqref_fatbin_decode_floor_hdim128_size};
  if (name == "decode_floor_hdim256")
    return {tqref_fatbin_decode_floor_hdim256, tqref_fatbin_decode_floor_hdim256_size};
  if (name == "bench_util") return {tqref_fatbin_bench_util, tqref_fatbin_bench_util_size};
  if (name == "writers_fast") return {tqref_fatbin_writers_fast, tqref_fatbin_writers_fast_size};
  return {};
}

}  // namespace tqref::kernels
