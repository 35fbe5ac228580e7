#!/usr/bin/env bash
# Packs what a GPU machine without Boost/HDF5 libraries needs to run a tqref build made here:
# the tqref binary, the kernel modules (our own, the mutants, the faulty ones) and the non-system shared
# libraries it links, into .device-carry/ (ignored by git). On the GPU machine:
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
# Everything ldd resolves except the C runtime, which the target system provides.
ldd "$out/bin/tqref" | awk '/=> \//{print $3}' |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
du -sh "$out"
