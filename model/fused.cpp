// The one place the model fuses a multiply and an add on purpose: the FMA variants of the
// contract (rules.h, VariantRules). Its own translation unit, never inlined, so that the
// contract's object code holds no fused instruction (scripts/check-aarch64.sh counts them in
// every other member of libtqref_model.a; the build has -ffp-contract=off).
#include <cmath>

#include "rules.h"

namespace tqref::rules {

float fused_multiply_add(float a, float b, float c) { return std::fma(a, b, c); }

}  // namespace tqref::rules
