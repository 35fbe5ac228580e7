#!/usr/bin/env bash
# scripts/device/conform-time.sh (plan conformtime) with a fake tqref on the CPU: one row per
# run in conformtime.tsv with the module count, exit code, the suite runs' seconds and the
# modules' launch times summed from the log and the seconds conform.json states; every decoder module's HDIM stated from its name;
# exit 1 when a run fails. Catches a timing table that drops a run, sums the wrong lines, or a
# run that leaves an HDIM to the probe (a broken decoder would then be "HDIM unknown").
# Usage: bash tests/test_device_conformtime.sh [REPO_ROOT]; under a second.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }
mkdir -p "$tmp/three" "$tmp/broken" "$tmp/out"
touch "$tmp/three/"{writers,decode_hdim128,decode_hdim256}.fatbin "$tmp/broken/decode_hdim128.fatbin"
# The fake: exit 3 unless each decoder module is given --hdim with the HDIM in its name; exit 1
# for the folder "broken"; the per-suite lines and conform.json as tqref conform writes them.
cat >"$tmp/tqref" <<'FAKE'
#!/usr/bin/env bash
shift  # conform
out="" mods="" hdims=""
while (($#)); do
  case $1 in
    --out) out=$2; shift ;;
    --modules) mods=$2; shift ;;
    --hdim) hdims+=" $2"; shift ;;
  esac
  shift
done
for f in "$mods"/*hdim*; do
  b=$(basename "$f") h=${b#*hdim}; h=${h%%.*}
  [[ $hdims == *" $b=$h"* ]] || { echo "no --hdim for $b"; exit 3; }
done
mkdir -p "$out" && printf '{\n  "seconds": 12.250000,\n  "x": 1\n}\n' >"$out/conform.json"
echo "  smoke: 6 cases, 6 passed, 0 failed, 4 skipped; level I: 6 of 6 invariant (0.4 s)"
echo "  /x/standard.h5: 66 cases, 66 passed, 0 failed, 66 skipped; level I: 66 of 66 invariant (2.5 s)"
echo "  GPU time: 40 launches; buffers to the device 0.10 s, kernels 0.50 s, buffers back 0.25 s"
echo "  GPU time: 2 launches; buffers to the device 0.01 s, kernels 0.02 s, buffers back 0.03 s"
[[ $mods == */broken ]] && exit 1
exit 0
FAKE
chmod +x "$tmp/tqref"
TQ=$tmp/tqref bash "$root/scripts/device/conform-time.sh" "$tmp" "$tmp/out" three broken >"$tmp/log" 2>&1
rc=$?
[[ $rc == 1 ]] || no "exit $rc, expected 1 (the broken run failed)"
tsv=$tmp/out/conformtime.tsv
[[ $(wc -l <"$tsv") == 3 ]] || no "conformtime.tsv: $(wc -l <"$tsv") lines, expected a header and 2 rows"
[[ $(awk -F'\t' 'NR == 2 { print $1, $2, $3, $5, $6, $7, $8, $9, $10 }' "$tsv") == "three 3 0 2.9 12.250000 42 0.11 0.52 0.28" ]] ||
  no "row of three: $(sed -n 2p "$tsv")"
[[ $(awk -F'\t' 'NR == 3 { print $1, $2, $3 }' "$tsv") == "broken 1 1" ]] || no "row of broken: $(sed -n 3p "$tsv")"
[[ -f $tmp/out/conform-three-1.log && -f $tmp/out/conform-broken-2.log ]] || no "a run's log is missing"
((fail)) && { cat "$tmp/log"; exit 1; }
echo "conform-time.sh: rows, sums, HDIMs and exit code as expected"
