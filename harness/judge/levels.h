// The levels a case is judged at (docs/gpu-harness.md): W and D bit for bit (writer, decoder),
// T within tolerance of the kernel-order model and the fp64 references (decoders), I invariance
// across launches of the same case. The letter is what reports print.
#pragma once
#include <string>

namespace tqref::judge {

enum class Level : char { W = 'W', D = 'D', T = 'T', I = 'I' };

inline std::string level_letter(Level l) { return std::string(1, char(l)); }

}  // namespace tqref::judge
