#!/usr/bin/env bash
# Packs what a GPU machine without Boost/HDF5 libraries needs to run a tqref build made here:
# the tqref binary, the kernel modules (our own, the mutants, the faulty ones), the Python API's
# libtqref_c.so (when built: target tqref_c) and the non-system shared libraries they link, into
# .device-carry/ (ignored by git). On the GPU machine:
#   export LD_LIBRARY_PATH=$PWD/.device-carry/lib; .device-carry/bin/tqref ...
set -euo pipefail
build=${1:-build/default}
out=.device-carry
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/modules"
cp "$build/harness/cli/tqref" "$out/bin/"
if [ -d "$build/kernels/modules" ]; then cp -r "$build/kernels/modules/." "$out/modules/"; fi
testing=$build/kernels/testing   # targets tqref_mutant_modules and tqref_faulty_modules
if [ -d "$testing/mutants" ]; then mkdir -p "$out/mutants" && cp -r "$testing/mutants/." "$out/mutants/"; fi
# Faulty decoders for scripts/device-faults.sh: kept out of modules/ (tqref conform scans it).
if [ -d "$testing/faulty" ]; then mkdir -p "$out/faulty" && cp -r "$testing/faulty/." "$out/faulty/"; fi
if [ -f "$build/python/libtqref_c.so" ]; then cp "$build/python/libtqref_c.so" "$out/lib/"; fi
. "$(dirname "$0")/carry-libs.sh"
carry_libs "$out/lib" "$out/bin/tqref" $(ls "$out"/lib/libtqref_c.so 2>/dev/null)
du -sh "$out"
