#!/usr/bin/env bash
# Packs what a GPU machine without this one's Boost/HDF5 libraries needs to run a build made here
# (the device plans of scripts/device-run.sh), with the non-system shared libraries it links.
#
#   bash scripts/device-carry.sh [BUILD (build/default)]
#       into .device-carry/ (ignored by git; carry it): the tqref binary, the kernel modules (our
#       own, the mutants, the faulty ones, the one-kernel decoders) and the Python API's libtqref_c.so (when built: target
#       tqref_c). On the GPU machine:
#         export LD_LIBRARY_PATH=$PWD/.device-carry/lib; .device-carry/bin/tqref ...
#   bash scripts/device-carry.sh --fuzz [FUZZ_BUILD (build/fuzz)]
#       the libFuzzer targets scripts/fuzz.sh built, their seeds and the corpora so far into
#       build/fuzz-carry (TQREF_FUZZ_CARRY), packed as build/fuzz-carry.tar.xz (about 10 MiB; carry
#       that file: the tree itself, about 60 MiB, is near the device tool's limit), for the fuzz
#       plan (scripts/device/fuzz-campaigns.sh).
# Exit 2 when a piece of the build is missing (nothing is left behind then).
set -euo pipefail
cd "$(dirname "$0")/.."

# carry_libs DEST BINARY...: copies every shared library ldd resolves for the BINARYs into DEST,
# except the C and C++ runtimes, which the target system provides.
carry_libs() {
  local dest=$1
  shift
  ldd "$@" | awk '/=> \//{print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dest/"; done
}

carry_build() {
  local build=${1:-build/default} out=.device-carry testing
  [[ -x $build/cli/tqref ]] || { echo "device-carry: $build/cli/tqref missing: build the target tqref" >&2; exit 2; }
  rm -rf "$out"
  mkdir -p "$out/bin" "$out/lib" "$out/modules"
  cp "$build/cli/tqref" "$out/bin/"
  if [[ -d $build/kernels/modules ]]; then cp -r "$build/kernels/modules/." "$out/modules/"; fi
  testing=$build/kernels/testing   # targets tqref_mutant_modules and tqref_faulty_modules
  if [[ -d $testing/mutants ]]; then mkdir -p "$out/mutants" && cp -r "$testing/mutants/." "$out/mutants/"; fi
  # Faulty decoders for the faults plan: kept out of modules/ (tqref conform scans it).
  if [[ -d $testing/faulty ]]; then mkdir -p "$out/faulty" && cp -r "$testing/faulty/." "$out/faulty/"; fi
  # One decoder per module (target tqref_one_kernel_modules) for the conformtime plan.
  if [[ -d $testing/one_kernel ]]; then mkdir -p "$out/one_kernel" && cp -r "$testing/one_kernel/." "$out/one_kernel/"; fi
  local linked=("$out/bin/tqref")
  if [[ -f $build/python/libtqref_c.so ]]; then
    cp "$build/python/libtqref_c.so" "$out/lib/"
    linked+=("$out/lib/libtqref_c.so")
  fi
  carry_libs "$out/lib" "${linked[@]}"
  du -sh "$out"
}

carry_fuzz() {
  local src=${1:-build/fuzz} carry=${TQREF_FUZZ_CARRY:-build/fuzz-carry} t
  local targets=(fuzz_sweep_config fuzz_trace_reader fuzz_ex2_profile fuzz_golden_reader fuzz_isolated_reader)
  for t in "${targets[@]}"; do
    [[ -x $src/tests/fuzz/$t ]] || { echo "device-carry: $src/tests/fuzz/$t missing: run scripts/fuzz.sh first" >&2; exit 2; }
  done
  [[ -d $src/seeds ]] || { echo "device-carry: $src/seeds missing: run scripts/fuzz.sh first" >&2; exit 2; }
  rm -rf "$carry" && mkdir -p "$carry/tests/fuzz" "$carry/lib"
  for t in "${targets[@]}"; do objcopy --strip-debug "$src/tests/fuzz/$t" "$carry/tests/fuzz/$t"; done
  cp -r "$src/seeds" "$carry/seeds"
  if [[ -d $src/corpus ]]; then cp -r "$src/corpus" "$carry/corpus"; fi
  carry_libs "$carry/lib" "$carry"/tests/fuzz/*
  tar -C "$(dirname "$carry")" -cJf "$carry.tar.xz" "$(basename "$carry")"
  du -sh "$carry" "$carry.tar.xz"
}

case ${1:-} in
  --fuzz) shift; carry_fuzz "$@" ;;
  -*) echo "usage: scripts/device-carry.sh [BUILD] | --fuzz [FUZZ_BUILD]" >&2; exit 2 ;;
  *) carry_build "$@" ;;
esac
