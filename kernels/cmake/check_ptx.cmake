# Static check of one module's PTX: cmake -DPTX=<file> -DMODULE=<name> -P check_ptx.cmake
# Fails when the PTX shows an operation that would break bit-exactness with the CPU model:
#   fma.*.f32            --fmad=false was lost or a fused multiply-add was written
#   div/rcp/sqrt .approx fast-math division, reciprocal or square root
#   <op>.ftz.f32         flush-to-zero arithmetic (only the EX2 unit, ex2.approx.ftz.f32, may ftz)
# and when an instruction the spec requires is missing (EX2 in the decoder, the satfinite fp8
# encoder in the writers).
if(NOT EXISTS "${PTX}")
  message(FATAL_ERROR "check_ptx: ${PTX} does not exist (build target tqref_kernel_modules)")
endif()
file(READ "${PTX}" ptx)
set(failed FALSE)
foreach(bad "fma\\.[a-z.]*f32" "(div|rcp|sqrt)\\.approx" "(add|sub|mul|div|sqrt|rcp|max|min|abs|neg|cvt[a-z0-9.]*)\\.ftz")
  string(REGEX MATCHALL "${bad}[^\n]*" hits "${ptx}")
  if(hits)
    list(GET hits 0 first)
    message(SEND_ERROR "check_ptx: ${PTX}: forbidden instruction /${bad}/: ${first}")
    set(failed TRUE)
  endif()
endforeach()
if(MODULE MATCHES "^decode")
  set(required "ex2\\.approx\\.ftz\\.f32" "shfl\\.sync\\.bfly\\.b32" "cvt\\.rn\\.f16x2\\.e4m3x2"
      "cvt\\.rn\\.bf16\\.f32" "div\\.rn\\.f32")
elseif(MODULE MATCHES "^writers(_fast)?$")
  set(required "cvt\\.rn\\.satfinite\\.e4m3x2\\.f32" "div\\.rn\\.f32" "sqrt\\.rn\\.f32")
else()
  message(FATAL_ERROR "check_ptx: MODULE '${MODULE}'; allowed: writers, writers_fast, decode_*")
endif()
foreach(req IN LISTS required)
  if(NOT ptx MATCHES "${req}")
    message(SEND_ERROR "check_ptx: ${PTX}: required instruction /${req}/ missing")
    set(failed TRUE)
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "check_ptx: ${PTX} failed")
endif()
message(STATUS "check_ptx: ${PTX} ok")
