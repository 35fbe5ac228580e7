#!/usr/bin/env bash
# GPU evidence for issue 15 (docs/models.md, docs/mutants.md "Build-flag mutants" and "Pools"):
#   1. tqref conform over our own modules (writers, decode_hdim128, decode_hdim256) with the
#      models suite (default dispatch: published), the pools, flags and smoke suites: exit 0;
#      every writer case exact (W); every decode case with head_dim == HDIM exact (D); every
#      launch with head_dim != HDIM reported outside the contract and within level T, its bits
#      equal to docs/spec.md section 5.1 (0 elements differ from the model's bits); every
#      pools case (blocks beyond 2^31, 2^32, 2^33 bytes of 9 GiB pools) passes;
#   2. conform over mutant 21 (offset32: 32-bit pool offsets) with the pools suite: exit 1, the
#      pools cases of its writers and decoders fail;
#   3. conform over each build-flag mutant (22 nvcc defaults, 23 --use_fast_math, 24 -ftz=true,
#      25 -prec-div=false, 26 -prec-sqrt=false) with smoke and flags: exit 1 (W or D fails);
#   4. conform over the control (27, plain operators with the contract's flags) with smoke,
#      flags and models: exit 0.
# Level I is off in these runs (--no-invariance; scripts/device-levelI.sh covers it).
#
# Usage (repository root on the GPU machine, after `scripts/device-carry.sh build/default` here
# with a CUDA build of the targets tqref and tqref_mutant_modules):
#   bash scripts/device-launches.sh OUT_DIR
# TQREF_BIN, TQREF_CARRY and TQREF_PYTHON override the tqref binary, the carry folder and the
# Python that reads the reports (tests/
# device_launches_host.sh runs this script's host side with a fake tqref on the CPU). Budget: about 2.5 minutes (TQREF_LAUNCHES_BUDGET seconds, default 170).
# Writes into OUT_DIR: summary.txt (every step and expectation, the verdicts), launches.tsv (per
# run, module and kernel: cases, passed, failed, outside the contract, differing from 5.1),
# log.txt (terminal output, trimmed), conform-own.md (the report of run 1, trimmed to 200 kB).
# Exit 0 only when every expectation holds.
set -u
out=${1:-${OUT:-}}
[[ -n $out ]] || { echo "usage: scripts/device-launches.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$PWD
carry=${TQREF_CARRY:-$root/.device-carry}
tq=${TQREF_BIN:-$carry/bin/tqref}
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TQREF_DATA_DIR=$root/data   # EX2 profiles and the committed smoke file of this checkout
budget=${TQREF_LAUNCHES_BUDGET:-170}
py=${TQREF_PYTHON:-$(command -v python3 || echo /usr/bin/python3)}
[[ -x $tq ]] || { echo "missing $tq: run scripts/device-carry.sh BUILD_DIR first" >&2; exit 2; }
mods=$carry/modules
muts=$carry/mutants
for f in "$mods/writers.fatbin" "$mods/decode_hdim128.fatbin" "$mods/decode_hdim256.fatbin" "$muts/mutants.tsv"; do
  [[ -f $f ]] || { echo "missing $f: build targets tqref tqref_mutant_modules, then scripts/device-carry.sh" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/tqref-launches.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log=$out/log.txt
: > "$log"
summary=()   # "step|rc|expected|seconds|verdict"
failed=0
smoke=$root/data/golden/smoke.h5

source "$root/scripts/device-steps.sh"   # left, step

# 0. The generated suites, once (the committed smoke file is used as it is).
threads=$(nproc)
# TQREF_LAUNCHES_MODELS_SHARD (default 0/1, the whole suite) lets the host test use a part.
models_shard=${TQREF_LAUNCHES_MODELS_SHARD:-0/1}
for s in models pools flags; do
  shard=()
  [[ $s == models ]] && shard=(--shard "$models_shard")
  step "generate $s" 0 60 "$tq" generate --suite "$s" "${shard[@]}" --threads "$threads" --out "$tmp/$s.h5"
done

# conform_run NAME EXPECTED SUITES MODULE_FILES... : tqref conform over a folder of those modules.
conform_run() {
  local name=$1 want=$2 suites=$3
  shift 3
  local dir=$tmp/mods-$name hdim=() f b
  mkdir -p "$dir"
  for f in "$@"; do
    cp "$f" "$dir/" 2>/dev/null || echo "missing module $f" | tee -a "$log"
    b=$(basename "$f")
    # HDIM stated, not probed: a broken decoder must not turn into "HDIM unknown" (exit 3)
    [[ $b == *decode_hdim128* ]] && hdim+=(--hdim "$b=128")
    [[ $b == *decode_hdim256* ]] && hdim+=(--hdim "$b=256")
  done
  step "conform $name" "$want" 90 "$tq" conform --modules "$dir" --suites "$suites" --no-invariance \
      "${hdim[@]}" --out "$tmp/conform-$name"
}

# 1. Our own modules: models (published dispatch), pools, flags, and smoke (which gives every
#    kernel of every module a case: a kernel without one is exit 3).
conform_run own 0 "$smoke,$tmp/models.h5,$tmp/pools.h5,$tmp/flags.h5" \
    "$mods/writers.fatbin" "$mods/decode_hdim128.fatbin" "$mods/decode_hdim256.fatbin"
# 2.-4. The mutants, from the manifest (every module file of a mutant id in one folder).
mutant_files() { awk -F'\t' -v id="$1" '$1 == id {print $4}' "$muts/mutants.tsv" | sed "s|^|$muts/|"; }
conform_run m21_offset32 1 "$tmp/pools.h5" $(mutant_files 21)
for id in 22 23 24 25 26; do
  short=$(awk -F'\t' -v id="$id" '$1 == id {print $2; exit}' "$muts/mutants.tsv")
  conform_run "m${id}_$short" 1 "$smoke,$tmp/flags.h5" $(mutant_files "$id")
done
conform_run m27_plain_ieee 0 "$smoke,$tmp/flags.h5,$tmp/models.h5" $(mutant_files 27)

# 5. What the reports say, per run, module and kernel, and the expectations on them.
"$py" - "$tmp" "$out/launches.tsv" > "$tmp/verdicts.txt" 2>&1 <<'EOF'
import glob, json, os, sys
tmp, tsv = sys.argv[1], sys.argv[2]
rows, problems, notes = [], [], []
def load(run):
    p = os.path.join(tmp, "conform-" + run, "conform.json")
    try:
        return json.load(open(p))
    except Exception as e:
        problems.append(f"{run}: no readable conform.json ({e})")
        return None
def cases(mod):
    """(suite, case result, level-T record or None) of every case judged for a module."""
    for su in mod.get("suites", []):
        tol = {c.get("name"): c for c in (su.get("tolerance") or {}).get("cases", [])}
        for r in su["check"]["results"]:
            yield os.path.basename(su["suite"]).removesuffix(".h5"), r, tol.get(r["name"])
runs = sorted(os.path.basename(d)[len("conform-"):] for d in glob.glob(os.path.join(tmp, "conform-*")))
for run in runs:
    j = load(run)
    if j is None:
        continue
    for mod in j["modules"]:
        m = os.path.basename(mod["path"])
        per = {}
        for suite, r, t in cases(mod):
            k = per.setdefault((r["kernel"], suite), {"cases": 0, "passed": 0, "failed": 0, "ooc": 0, "differ": 0})
            k["cases"] += 1
            k["passed" if r["pass"] else "failed"] += 1
            ooc = "outside the contract" in (r.get("note") or "")
            k["ooc"] += ooc
            if t is not None:
                k["differ"] += int(t.get("differing_from_model", 0))
            if run == "own" and not r["pass"]:
                problems.append(f"own {m}: {suite} case {r['name']} failed ({'outside the contract' if ooc else 'exact'})")
        for (kernel, suite), k in sorted(per.items()):
            rows.append([run, m, kernel, suite, k["cases"], k["passed"], k["failed"], k["ooc"], k["differ"]])
        if run == "own":
            ooc = sum(k["ooc"] for k in per.values())
            differ = sum(k["differ"] for k in per.values())
            if m.startswith("decode_hdim128") and ooc == 0:
                problems.append(f"own {m}: no launch outside the contract was judged (models suite, published dispatch)")
            if differ:
                problems.append(f"own {m}: {differ} elements of launches outside the contract differ from docs/spec.md section 5.1")
            if ooc:
                own = mod.get("builtin") or "not recognised as the embedded build"
                notes.append(f"own {m} ({own}): {ooc} launches outside the contract, all within level T, "
                             f"{differ} elements differ from section 5.1")
            pools = [k for (kern, s), k in per.items() if s == "pools"]
            if not pools or any(k["failed"] for k in pools):
                problems.append(f"own {m}: pools cases missing or failing")
        if run.startswith("m21_"):
            pools = sum(k["failed"] for (kern, s), k in per.items() if s == "pools")
            notes.append(f"offset32 {m}: {pools} pools cases fail")
            if pools == 0:
                problems.append(f"offset32 {m}: no pools case fails")
    fails = sum(r[6] for r in rows if r[0] == run)
    if run.startswith(("m22_", "m23_", "m24_", "m25_", "m26_")):
        which = sorted({f"{r[2]} ({r[3]})" for r in rows if r[0] == run and r[6]})
        notes.append(f"{run}: {fails} failing cases: {', '.join(which) if which else 'none'}")
        if fails == 0:
            problems.append(f"{run}: the build-flag mutant passes every case")
    if run.startswith("m27_") and fails:
        problems.append(f"{run}: the control fails {fails} cases")
with open(tsv, "w") as f:
    f.write("run\tmodule\tkernel\tsuite\tcases\tpassed\tfailed\toutside_contract\tdiffer_from_5.1\n")
    for r in rows:
        f.write("\t".join(map(str, r)) + "\n")
for n in notes:
    print("  " + n)
for p in problems:
    print("  PROBLEM: " + p)
sys.exit(1 if problems else 0)
EOF
prc=$?
(( prc != 0 )) && failed=1
head -c 200000 "$tmp/conform-own/conform.md" > "$out/conform-own.md" 2>/dev/null

{
  echo "tqref device-launches, $(date -u +%Y-%m-%dT%H:%M:%SZ), ${SECONDS}s"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
  "$tq" version 2>/dev/null | head -n 2
  echo
  printf '%-40s %5s %8s %5s  %s\n' step rc expected sec verdict
  for row in "${summary[@]}"; do
    IFS='|' read -r n rc want sec v <<< "$row"
    printf '%-40s %5s %8s %5s  %s\n' "$n" "$rc" "$want" "$sec" "$v"
  done
  echo
  echo "reports:"
  cat "$tmp/verdicts.txt"
  echo
  if (( failed )); then echo "RESULT: some expectation did not hold (see above and log.txt)"
  else echo "RESULT: every expectation held"; fi
} > "$out/summary.txt"
cat "$out/summary.txt"
exit $failed
