# CMake toolchain for a host-only (no CUDA) aarch64 Linux build with Debian's cross compiler
# (g++-aarch64-linux-gnu) against an arm64 Debian sysroot that holds the target's libraries and
# headers (HDF5, yaml-cpp, Boost, glibc, libstdc++). scripts/check-aarch64.sh builds the sysroot and
# passes its path; docs/aarch64.md describes the check.
#   cmake -S . -B build/aarch64 --toolchain cmake/aarch64-linux-gnu.cmake \
#         -DTQREF_AARCH64_SYSROOT=DIR -DTQREF_ENABLE_CUDA=OFF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

# The sysroot: a cache variable, else the environment, else the check script's default cache.
# It is forwarded to try_compile projects, which read this file again.
if(NOT TQREF_AARCH64_SYSROOT)
  if(DEFINED ENV{TQREF_AARCH64_SYSROOT})
    set(TQREF_AARCH64_SYSROOT "$ENV{TQREF_AARCH64_SYSROOT}")
  else()
    set(TQREF_AARCH64_SYSROOT "$ENV{HOME}/.cache/tqref-aarch64/sysroot")
  endif()
endif()
set(TQREF_AARCH64_SYSROOT "${TQREF_AARCH64_SYSROOT}" CACHE PATH "arm64 Debian sysroot (scripts/check-aarch64.sh)")
if(NOT EXISTS "${TQREF_AARCH64_SYSROOT}/usr/include/aarch64-linux-gnu")
  message(FATAL_ERROR "aarch64 toolchain: ${TQREF_AARCH64_SYSROOT} is not an arm64 sysroot "
                      "(no usr/include/aarch64-linux-gnu); build it with scripts/check-aarch64.sh")
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TQREF_AARCH64_SYSROOT)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_SYSROOT "${TQREF_AARCH64_SYSROOT}")
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Libraries, headers and CMake package files come from the sysroot only; programs (ccache, git)
# from the host.
set(CMAKE_FIND_ROOT_PATH "${TQREF_AARCH64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# FindHDF5 would run the host's h5cc wrapper, which names the x86-64 include and library paths.
# A wrapper that fails (/bin/false) sends it to its own search, which finds Debian's serial HDF5
# (usr/include/hdf5/serial, usr/lib/aarch64-linux-gnu/hdf5/serial) inside the sysroot; it then
# prints "HDF5 C compiler wrapper is unable to compile a minimal HDF5 program", which is expected.
set(HDF5_C_COMPILER_EXECUTABLE /bin/false CACHE FILEPATH "not used for the cross build")

# Test programs (CTest) run through qemu-user with the sysroot as the dynamic loader's root.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L "${TQREF_AARCH64_SYSROOT}")
