#!/usr/bin/env bash
# `tqref conform` on the H200, the way a GB10 owner runs it (docs/conform-guide.md), over our own
# modules and some that must fail. Four runs, each with its own report directory under OUT_DIR:
#   own/      our writers + decoders as PTX (compute_90, JIT), as cubins (sm_90) and as fatbins;
#             decoders' HDIM probed for PTX/fatbin, stated with --hdim for the cubins.
#             Suites: smoke + shard 0/4 of standard.               expected exit 0
#   mutants/  three mutant modules (writer slot+1, decoder neighbour scale, no sparse skip),
#             smoke suite.                                         expected exit 1 (caught)
#   foreign/  modules built for sm_121 only (cubin, compute_121 PTX): must be refused with
#             "built for sm_121 ..., this GPU is sm_90".           expected exit 3
#   nogpu/    CUDA_VISIBLE_DEVICES= : no device.                   expected exit 4
# With CONFORM_CALIBRATE=1 a fifth run (calibrate/) measures EX2 again with --calibrate against a
# copy of data/ (about 2 more minutes); the committed profile is never touched.
#
# Usage (repository root on the GPU machine, after scripts/device-carry.sh BUILD here, BUILD
# holding tqref and the mutant modules, e.g. a build with target tqref_mutant_modules):
#   bash scripts/device-conform.sh OUT_DIR
# Budget: about 3 minutes on an H200. summary.txt in OUT_DIR lists every run's exit code.
set -u
out=${1:-${OUT:-}}
[[ -n $out ]] || { echo "usage: scripts/device-conform.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$PWD
carry=$root/.device-carry
tq=$carry/bin/tqref
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TQREF_DATA_DIR=$root/data   # EX2 profiles and golden files of this checkout
[[ -x $tq ]] || { echo "missing $tq: run scripts/device-carry.sh BUILD_DIR first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/tqref-conform.XXXXXX)
summary=()

# run NAME EXPECTED_RC LIMIT_S ARGS... : tqref conform with a timeout; log in OUT/NAME.log.
run() {
  local name=$1 want=$2 limit=$3
  shift 3
  echo "=== $name: tqref conform $* (expect exit $want)"
  local t0=$SECONDS rc
  timeout --kill-after=5 "$limit" "$tq" conform "$@" > "$out/$name.log" 2>&1
  rc=$?
  tail -n 4 "$out/$name.log"
  local v=ok
  [[ $rc == "$want" ]] || v="UNEXPECTED (wanted $want)"
  summary+=("$name|$rc|$((SECONDS - t0))|$v")
}

mods=$carry/modules
stage() {  # stage DIR FILE... : copies module files into one directory for --modules
  local d=$1; shift
  mkdir -p "$d"
  for f in "$@"; do [[ -f $mods/$f ]] && cp "$mods/$f" "$d/" || echo "missing module $mods/$f"; done
}

# Standard subset for the own modules' run: shard 0 of 4, about 80 of its 324 cases (the whole
# suite takes 72 s to generate with 16 threads).
std=$tmp/standard-shard0of4.h5
"$tq" generate --suite standard --shard 0/4 --threads "$(nproc)" --out "$std" > "$out/generate.log" 2>&1 ||
  echo "generate standard shard failed: see $out/generate.log"

# 1. Our own modules, three packagings.
own=$tmp/own
stage "$own/ptx" writers.compute_90.ptx decode_hdim128.compute_90.ptx decode_hdim256.compute_90.ptx
stage "$own/cubin" writers.sm_90.cubin decode_hdim128.sm_90.cubin decode_hdim256.sm_90.cubin
stage "$own/fatbin" writers.fatbin decode_hdim128.fatbin decode_hdim256.fatbin
run own 0 150 --modules "$own" --suites "smoke,$std" --out "$out/own" \
    --hdim decode_hdim128.sm_90.cubin=128 --hdim decode_hdim256.sm_90.cubin=256

# 2. Mutants: must be caught (exit 1).
mut=$tmp/mutants
mkdir -p "$mut"
for f in mutant_1_writer_slot_plus1.writers.fatbin mutant_6_neighbour_scale.decode_hdim128.fatbin \
         mutant_15_no_sparse_skip.decode_hdim256.fatbin; do
  [[ -f $carry/mutants/$f ]] && cp "$carry/mutants/$f" "$mut/" || echo "missing mutant $f"
done
run mutants 1 60 --modules "$mut" --suites smoke --out "$out/mutants"

# 3. Modules for another GPU: refused with the architecture named (exit 3).
stage "$tmp/foreign" writers.sm_121.cubin decode_hdim128.compute_121.ptx
run foreign 3 30 --modules "$tmp/foreign" --suites smoke --out "$out/foreign"

# 4. No device visible: clear message, exit 4.
CUDA_VISIBLE_DEVICES= run nogpu 4 20 --modules "$own/ptx" --suites smoke --out "$out/nogpu"

# 5. Optional: --calibrate against a copy of data/ (identical profile expected; nothing replaced).
if [[ ${CONFORM_CALIBRATE:-0} == 1 ]]; then
  cp -r "$root/data" "$tmp/data"
  TQREF_DATA_DIR=$tmp/data run calibrate 0 240 --calibrate --modules "$own/cubin" --suites smoke \
      --out "$out/calibrate" --hdim decode_hdim128.sm_90.cubin=128 --hdim decode_hdim256.sm_90.cubin=256
fi

{
  echo "tqref conform on the device, $(date -u +%Y-%m-%dT%H:%M:%SZ), ${SECONDS}s"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
  "$tq" version 2>/dev/null | head -n 2
  printf '%-10s %4s %5s  %s\n' run rc sec verdict
  for row in "${summary[@]}"; do
    IFS='|' read -r n rc sec v <<< "$row"
    printf '%-10s %4s %5s  %s\n' "$n" "$rc" "$sec" "$v"
  done
  for n in own mutants foreign; do
    [[ -f $out/$n/conform.md ]] && { echo; echo "--- $n: $(sed -n 3p "$out/$n/conform.md")"; }
  done
} > "$out/summary.txt"
cat "$out/summary.txt"
rm -rf "$tmp"
