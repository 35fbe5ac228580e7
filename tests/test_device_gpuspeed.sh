#!/usr/bin/env bash
# The gpuspeed plan (scripts/device/plans.tsv through scripts/device-run.sh) end to end without a
# GPU: a stand-in `tqref` writes bench JSON of the real schema (one writer shape, one decode shape)
# and logs its launches, a stand-in `ncu` runs it and prints the wide CSV for those launches.
# Checks the exit codes (0 all equal; 1 a mismatch, or no binary), that the join, the projection
# and report.md (with the 70 % goal line) are written. Catches: a step whose output path or
# options drifted from what analysis/ncu_join.py, gb10_projection.py or the report read, a
# mismatch that does not reach the exit status.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
[[ -x $py ]] || { echo "skipped: $py missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/carry/bin" "$tmp/fakebin"

cat > "$tmp/carry/bin/tqref" <<EOF
#!$py
import json, os, sys
a = sys.argv[1:]
val = lambda k, d=None: a[a.index(k) + 1] if k in a else d
warmup, runs = int(val("--warmup", 5)), int(val("--runs", 30))
ok = os.environ.get("FAKE_MISMATCH") != "1"
log = open(os.environ["FAKE_LAUNCH_LOG"], "a")
dev = {"name": "Fake H200", "arch": "sm_90", "driver": "x", "sm_count": 132}
b = {"schema": "tqref.bench/1", "device": dev, "copy": {"gbps_read_write": 4000.0}, "decode": [], "writer": []}
if val("--set") == "writers":
    for fast, ms in ((False, 0.6), (True, 0.15)):
        k = "reshape_and_cache_flash_bf16k_turbo2v" + ("_fast" if fast else "")
        g = 16384 if fast else 65536
        b["writer"].append({"kernel": k, "fast": fast, "format": "turbo2v", "hdim": 128, "num_kv_heads": 8,
                            "tokens": 65536, "block_size": 16, "grid_x": g, "launches": 2 + warmup + runs,
                            "timing": {"median_ms": ms}, "bytes": 440000000, "gbps": 440 / ms,
                            "copy_same_bytes": {"median_ms": 0.11}, "fraction_of_copy": 0.11 / ms,
                            "conformant": ok, "mismatches": 0 if ok else 3})
        for _ in range(2 + warmup + runs): print(k, g, 1, file=log)
else:
    for ht, ms in ((0, 4.0), (4, 1.3)):
        k = "paged_decode_attn_bf16k_turbo3v" + ("_gqa" if ht else "")
        b["decode"].append({"kernel": k, "heads_per_cta": ht, "format": "turbo3v", "hdim": 128, "num_seqs": 32,
                            "num_q_heads": 32, "num_kv_heads": 8, "seq_len": 16384, "block_size": 16, "q_sigma": 1,
                            "model": "Llama-3.1-8B", "pairs": 16777216, "grid_x": 8 if ht else 32,
                            "launches": 1 + warmup + runs, "timing": {"median_ms": ms}, "k_bytes": 1,
                            "v_bytes_full": 1, "qo_bytes": 1, "skip_rate": 0.001, "conformant": ok})
        for _ in range(1 + warmup + runs): print(k, 8 if ht else 32, 32, file=log)
        if ht: print(k + "_stats", 8, 32, file=log)
json.dump(b, open(val("--json"), "w"))
print("fake bench done")
sys.exit(0 if ok else 1)
EOF
cat > "$tmp/fakebin/ncu" <<EOF
#!$py
import os, subprocess, sys
a = sys.argv[1:]
regex = a[a.index("--kernel-name") + 1].split(":", 1)[1]
cmd = a[next(i for i, x in enumerate(a) if x.endswith("/tqref")):]
open(os.environ["FAKE_LAUNCH_LOG"], "w").close()
rc = subprocess.call(cmd)
import re
m = ["smsp__inst_executed.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
     "sm__cycles_elapsed.avg", "launch__grid_size"]
print('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",' +
      ",".join(f'"{x}"' for x in m))
print('"","","","","","","","",""' + ',"inst","byte","byte","nsecond","cycle",""')
i = 0
for line in open(os.environ["FAKE_LAUNCH_LOG"]):
    k, gx, gy = line.split()
    if not re.search(regex, k): continue
    print(f'"{i}","1","tqref","h","{k}","1","7","(256, 1, 1)","({gx}, {gy}, 1)","800000000","1200000000",'
          f'"300000000","1250000","2500000","{int(gx) * int(gy)}"')
    i += 1
sys.exit(rc)
EOF
chmod +x "$tmp/carry/bin/tqref" "$tmp/fakebin/ncu"
export FAKE_LAUNCH_LOG=$tmp/launches.txt
fail() { echo "FAIL: $*"; exit 1; }

export TQREF_CARRY=$tmp/carry TQREF_PYTHON=$py
plan() {  # plan OUT: the gpuspeed plan into OUT/gpuspeed, its files unpacked there
  PATH=$tmp/fakebin:$PATH OUT=$1 bash "$root/scripts/device-run.sh" gpuspeed > "$1.log" 2>&1
  local rc=$?
  [[ -f $1/gpuspeed/gpuspeed.tar.xz ]] && tar -C "$1/gpuspeed" -xJf "$1/gpuspeed/gpuspeed.tar.xz"
  return $rc
}

plan "$tmp/out"
rc=$?
o=$tmp/out/gpuspeed
[[ $rc == 0 ]] || { cat "$tmp/out.log"; fail "all equal: exit $rc, expected 0"; }
for f in report.md writers.json models.json per_launch.json per_launch.md gb10_projection.md; do
  [[ -s $o/$f ]] || fail "$f not written"
done
grep -q "goal turbo2v 65536 x 8 x 128: 73.3 % of copy (met" "$o/report.md" || fail "goal line: $(grep goal "$o/report.md")"
grep -q "Llama-3.1-8B turbo3v hdim128 32x32/8 L16384 | GQA HT 4" "$o/gb10_projection.md" || fail "projection rows"
grep -q "47.68 / pair" "$o/per_launch.md" || fail "instructions per pair: $(cat "$o/per_launch.md")"

FAKE_MISMATCH=1 plan "$tmp/out2"
rc=$?
[[ $rc == 1 ]] || fail "a mismatch: exit $rc, expected 1"
grep -q "verdict: MISMATCH" "$tmp/out2/gpuspeed/report.md" || fail "mismatch verdict"

rm "$tmp/carry/bin/tqref"
plan "$tmp/out3"
rc=$?
[[ $rc == 1 ]] || fail "no binary: exit $rc, expected 1"
grep -q "^writers.*NOT RUN (requirement require-carry failed)" "$tmp/out3/gpuspeed/summary.txt" ||
  fail "no binary: the plan ran on: $(cat "$tmp/out3/gpuspeed/summary.txt")"
echo "test_device_gpuspeed: all checks passed"
