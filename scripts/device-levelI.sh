#!/usr/bin/env bash
# GPU evidence for level I, the failure anatomy and the write-decided HDIM probe
# (docs/invariance-and-anatomy.md):
#   1. our kernels pass level I: smoke, real and shard 0/8 of standard, built-in fatbins;
#   2. each invariance mutant (18 dense_large_batch, 19 block_parity_lsb at both HDIMs, 20
#      writer_contiguous) fails level I with its property named, and 18 and 20 pass W/D;
#   3. tqref conform over our own modules as PTX (HDIM probed, level I on): exit 0, every
#      decoder module's HDIM decided by its writes;
#   4. tqref conform over mutant modules (HDIM probed): exit 1, every failing case with an anatomy
#      sentence and a hypothesis verdict (conform.md, conform.json, terminal), the probe's HDIM
#      and its evidence per module, the verdicts compared with the mutants' own hypotheses.
# The faulty modules of kernels/testing/faulty (trap, runaway, illegal address) are not run here:
# they end the process's GPU context (scripts/device-faults.sh covers them).
#
# Usage (repository root on the GPU machine, after `scripts/device-carry.sh BUILD` here with a
# CUDA build holding tqref, the modules and the mutants: targets tqref tqref_mutant_modules):
#   bash scripts/device-levelI.sh OUT_DIR
# Budget: about 3.5 minutes (TQREF_LEVELI_BUDGET seconds, default 210). Writes into OUT_DIR:
#   summary.txt (every step, its exit code, the expected one, the verdict), log.txt (terminal
#   output, trimmed), levelI.tsv (level I and W/D per build), anatomy.tsv (every failing case of
#   the conform runs: module, case, diagnosis, sentence, verdict), hdim.tsv (module, HDIM,
#   evidence, why), conform-mutants.md, conform-own.md (the reports, trimmed to 400 kB).
# Exit 0 only when every step shows what it must.
set -u
out=${1:-${OUT:-}}
[[ -n $out ]] || { echo "usage: scripts/device-levelI.sh OUT_DIR" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$PWD
carry=$root/.device-carry
tq=$carry/bin/tqref
export LD_LIBRARY_PATH=$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TQREF_DATA_DIR=$root/data   # EX2 profiles and golden files of this checkout
budget=${TQREF_LEVELI_BUDGET:-210}
py=$(command -v python3 || echo /usr/bin/python3)
[[ -x $tq ]] || { echo "missing $tq: run scripts/device-carry.sh BUILD_DIR first" >&2; exit 2; }
[[ -f $carry/mutants/mutants.tsv ]] || { echo "missing $carry/mutants: build target tqref_mutant_modules" >&2; exit 2; }
tmp=$(mktemp -d /tmp/tqref-levelI.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
log=$out/log.txt
: > "$log"
summary=()   # "step|rc|expected|seconds|verdict"
failed=0
smoke=$root/data/golden/smoke.h5
real=$root/data/golden/real.h5

source "$root/scripts/device-steps.sh"   # left, step

# json_get FILE EXPR : a value from a JSON report (EXPR is Python over `j`), "" if unreadable.
json_get() {
  "$py" - "$1" "$2" <<'EOF' 2>/dev/null
import json, sys
try:
    j = json.load(open(sys.argv[1]))
    print(eval(sys.argv[2]))
except Exception:
    print("")
EOF
}

# 1. Our kernels at level I (built-in fatbins).
std=$tmp/standard-0of8.h5
"$tq" generate --suite standard --shard 0/8 --threads "$(nproc)" --out "$std" > "$tmp/gen.log" 2>&1 ||
  echo "generate standard shard 0/8 failed: $(tail -n 2 "$tmp/gen.log")" | tee -a "$log"
step "own smoke level I" 0 60 "$tq" check "$smoke" --backend gpu --level I --report "$tmp/own-smoke.json"
step "own real level I" 0 60 "$tq" check "$real" --backend gpu --level I
[[ -f $std ]] && step "own standard 0/8 level I" 0 90 "$tq" check "$std" --backend gpu --level I

# 2. The invariance mutants: W/D, then level I with its property named.
printf 'id\tshort\tmodule\texact_rc\texact_expected\tlevelI_rc\tdiagnoses\texpected\n' > "$out/levelI.tsv"
while IFS=$'\t' read -r id short module file what; do
  [[ $id == 18 || $id == 19 || $id == 20 ]] || continue
  case $module in
    writers) args=(--kind writer) ;;
    decode_hdim128 | decode_hdim256) args=(--kind decode --hdim "${module#decode_hdim}") ;;
    *) continue ;;
  esac
  case $id in 18) prop=placement ex=0 ;; 19) prop=blocks ex=1 ;; 20) prop=token-order ex=0 ;; esac
  m=$carry/mutants/$file
  # Mutant 18 changes only positions the skip would drop; smoke's HDIM-256 cases skip none (the
  # model with the same fault passes them at level I), so its HDIM-256 build is judged on the
  # standard shard, whose d256 cases do skip (5 of them fail level I under the model's mirror).
  f=$smoke
  [[ $id == 18 && $module == decode_hdim256 && -f $std ]] && f=$std
  step "mutant $id $module W/D" "$ex" 60 "$tq" check "$f" --backend gpu --module "$m" "${args[@]}"
  rx=$?
  step "mutant $id $module level I" 1 60 "$tq" check "$f" --backend gpu --module "$m" "${args[@]}" \
      --level I --report "$tmp/m$id.json"
  ri=$?
  diags=$(json_get "$tmp/m$id.json" "','.join(sorted({c['diagnosis'] for c in j['invariance']['cases'] if not c['pass']}))")
  v=ok
  [[ $diags == "invariance:$prop" ]] || { v="UNEXPECTED diagnoses '$diags'"; failed=1; }
  summary+=("mutant $id $module names $prop|-|-|0|$v")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$short" "$module" "$rx" "$ex" "$ri" "$diags" "invariance:$prop" \
    >> "$out/levelI.tsv"
done < "$carry/mutants/mutants.tsv"

# 3. conform over our own modules as PTX: HDIM probed (decided by writes), level I on.
own=$tmp/own
mkdir -p "$own"
for f in writers decode_hdim128 decode_hdim256; do cp "$carry/modules/$f.compute_90.ptx" "$own/" 2>/dev/null ||
  echo "missing module $f.compute_90.ptx" | tee -a "$log"; done
step "conform own PTX" 0 80 "$tq" conform --modules "$own" --suites smoke --out "$tmp/conform-own"
cp "$tmp/step.out" "$tmp/conform-own.out"

# 4. conform over mutant modules: the invariance mutants and one of each kind of classic mutant
#    (not mutant 12 at HDIM 256: it faults the GPU on smoke, which ends conform's context with
#    exit 6 before the other modules run; device-suite.sh counts that fault as caught)
# whose module the smoke suite exercises; HDIM probed.
mut=$tmp/mutants
mkdir -p "$mut"
for f in mutant_1_writer_slot_plus1.writers mutant_2_bound_strict.writers mutant_9_scale_fp8_rz.writers \
         mutant_17_writer_tight_data_section.writers mutant_20_writer_contiguous.writers \
         mutant_6_neighbour_scale.decode_hdim128 mutant_15_no_sparse_skip.decode_hdim128 \
         mutant_14_expf_no_split.decode_hdim128 mutant_3_no_batch.decode_hdim128 \
         mutant_8_tight_block_stride.decode_hdim256 mutant_10_butterfly_ascending.decode_hdim128 \
         mutant_16_fp32_codebook.decode_hdim256 mutant_18_dense_large_batch.decode_hdim128 \
         mutant_19_block_parity_lsb.decode_hdim256; do
  cp "$carry/mutants/$f.fatbin" "$mut/" 2>/dev/null || echo "missing mutant $f.fatbin" | tee -a "$log"
done
step "conform mutants" 1 120 "$tq" conform --modules "$mut" --suites smoke --show 2 --out "$tmp/conform-mutants"
cp "$tmp/step.out" "$tmp/conform-mutants.out"

# Reports, trimmed, and what the JSON says about every failing case and every module's HDIM.
for r in own mutants; do
  [[ -f $tmp/conform-$r/conform.md ]] && head -c 400000 "$tmp/conform-$r/conform.md" > "$out/conform-$r.md"
done
"$py" - "$tmp/conform-mutants/conform.json" "$tmp/conform-own/conform.json" "$out" \
      "$tmp/conform-mutants.out" <<'EOF' > "$tmp/anatomy.out" 2>&1
# Collects anatomy.tsv and hdim.tsv and checks: every failing case (any level) of the mutant run
# carries an anatomy sentence and a hypothesis verdict (or, at level I, its sentence), also on the
# terminal; every decoder module of both runs has its HDIM decided, our own by writes.
import json, os, sys
mut_json, own_json, out, terminal = sys.argv[1:5]
# What each classic mutant's own hypothesis is (docs/mutants.md); a verdict naming it is expected
# for the cases that fail at the exact level (reported, not required: GPU timing can make
# mutant 11-style races differ).
own_hyp = {"mutant_1_": "hypothesis:slot-plus1", "mutant_2_": "hypothesis:bound-strict",
           "mutant_9_": "hypothesis:scale-fp8-rz", "mutant_17_": "hypothesis:writer-tight-data-section",
           "mutant_6_": "hypothesis:neighbour-scale", "mutant_15_": "hypothesis:skip-disabled",
           "mutant_14_": "hypothesis:expf-no-split", "mutant_8_": "hypothesis:tight-block-stride",
           "mutant_12_": "hypothesis:window-plus1", "mutant_19_": "pattern:lowest-bit"}
problems, rows, hd = [], [], []
term = open(terminal, errors="replace").read() if os.path.exists(terminal) else ""
for path, label in ((mut_json, "mutants"), (own_json, "own")):
    if not os.path.exists(path):
        problems.append(f"{label}: no conform.json")
        continue
    j = json.load(open(path))
    for m in j["modules"]:
        tag = m["tag"]
        if m["hdim"]:
            hd.append((label, tag, m["hdim"], m.get("hdim_evidence", ""), m["hdim_why"]))
            if m.get("hdim_evidence") not in ("writes", "stated"):
                problems.append(f"{tag}: HDIM evidence {m.get('hdim_evidence')!r}")
        want = next((v for k, v in own_hyp.items() if k in tag), None)
        for s in m["suites"]:
            for c in s["check"]["results"]:
                if c["pass"]:
                    continue
                a = c.get("anatomy", {})
                rows.append((tag, s["suite"], c["name"], a.get("diagnosis", ""), a.get("sentence", ""),
                             a.get("verdict", ""), want or ""))
                if not a.get("sentence") or not a.get("verdict"):
                    problems.append(f"{tag}/{c['name']}: no anatomy sentence or verdict")
                elif a["sentence"][:60] not in term:
                    problems.append(f"{tag}/{c['name']}: anatomy not on the terminal")
            for c in s.get("invariance", {}).get("cases", []):
                if not c["pass"]:
                    rows.append((tag, s["suite"], c["name"] + " [level I]", c["diagnosis"], c["sentence"], "", ""))
                    if not c["sentence"]:
                        problems.append(f"{tag}/{c['name']}: level I failure without a sentence")
with open(os.path.join(out, "anatomy.tsv"), "w") as f:
    f.write("module\tsuite\tcase\tdiagnosis\tsentence\tverdict\tmutant's own hypothesis\n")
    for r in rows:
        f.write("\t".join(str(x).replace("\t", " ") for x in r) + "\n")
with open(os.path.join(out, "hdim.tsv"), "w") as f:
    f.write("run\tmodule\thdim\tevidence\twhy\n")
    for r in hd:
        f.write("\t".join(str(x) for x in r) + "\n")
named = sum(1 for r in rows if r[6] and r[3] == r[6])
expected = sum(1 for r in rows if r[6])
print(f"failing cases: {len(rows)}; with the mutant's own diagnosis: {named} of {expected}")
for p in problems:
    print("PROBLEM:", p)
sys.exit(1 if problems else 0)
EOF
rc=$?
cat "$tmp/anatomy.out" | tee -a "$log"
v=ok
[[ $rc == 0 ]] || { v="UNEXPECTED (see log.txt)"; failed=1; }
summary+=("anatomy and HDIM evidence|$rc|0|0|$v")

{
  echo "level I, anatomy and HDIM probe on the device, $(date -u +%Y-%m-%dT%H:%M:%SZ), ${SECONDS}s"
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /'
  "$tq" version 2>/dev/null | head -n 2
  printf '%-40s %4s %4s %5s  %s\n' step rc want sec verdict
  for row in "${summary[@]}"; do
    IFS='|' read -r n rc want sec v <<< "$row"
    printf '%-40s %4s %4s %5s  %s\n' "$n" "$rc" "$want" "$sec" "$v"
  done
  echo
  head -n 1 "$tmp/anatomy.out"
  for r in own mutants; do
    [[ -f $out/conform-$r.md ]] && echo "--- conform $r: $(sed -n 3p "$out/conform-$r.md")"
  done
  echo "overall: $([[ $failed == 0 ]] && echo PASS || echo FAIL)"
} > "$out/summary.txt"
cat "$out/summary.txt"
exit $failed
