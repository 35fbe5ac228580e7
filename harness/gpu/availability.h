// Whether this process can use a GPU, asked by every command that needs one before it reads a
// file. Defined by availability.cpp in CUDA builds and by no_gpu.cpp in CPU-only builds (CMake
// links one: harness/gpu/CMakeLists.txt), so the CLI asks without knowing which build it is.
#pragma once
#include <string>

namespace tqref::gpu {

// "" when a CUDA driver with at least one device can be used; else why not: "this tqref was built
// without CUDA (no nvcc at configure time)", the driver's load failure and "; 0 devices", or a
// driver that reports 0 devices.
std::string unavailable_reason();

}  // namespace tqref::gpu
