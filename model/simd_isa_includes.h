// Every header the SIMD paths use (simd_isa_impl.h), included by each simd_<isa>.cpp before its
// `#pragma GCC target` region: inline functions and templates defined here stay compiled for the
// build's baseline, so no copy of them is ever specific to one instruction set.
#pragma once
// ex2_eval.h's and vec_ops.h's always-inlined templates take vectors wider than the baseline's
// registers when instantiated for the wider lanes; they are inlined into functions of the wider
// instruction set, so the ABI note GCC gives for them does not apply. (GCC places the note at the
// template, so the pragma precedes the includes.) Nothing from these headers that is not always
// inlined may take or return such a vector (vec_ops.h says why).
#pragma GCC diagnostic ignored "-Wpsabi"
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "ex2_eval.h"
#include "simd_kernels.h"
#include "tqref/contract.h"
#include "tqref/format.h"
#include "tqref/numeric.h"
