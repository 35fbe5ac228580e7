#!/usr/bin/env bash
# scripts/device-run.sh on a tiny local plan (no GPU, no build): a step that exits 0, one that
# must exit 3 and does, one that exits 4 where 0 is expected, one that outlives its 1 s timeout,
# one that skips itself (77), and a require step that stops its plan. Checks the summary rows,
# the per-step logs, the exit code, --list running nothing, step selection, packing into
# PLAN.tar.xz past 8 files, and that the project's own table parses (every command through
# bash -n). Catches a runner that ignores exit codes or timeouts, or runs steps on --list.
# Usage: bash tests/test_device_run.sh [REPO_ROOT]; about 3 s.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
run=$root/scripts/device-run.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
no() { echo "FAIL: $*"; fail=1; }
# plan STEP EXPECTED TIMEOUT COMMAND: one row of the table (tab-separated)
row_of() { printf '%s\t%s\t%s\t%s\t%s\n' "$@"; }
{
  echo "# a comment line"
  echo "## tiny: one step of each kind"
  row_of tiny pass 0 5 'echo "step sees OUT=$OUT"'
  row_of tiny three 3 5 'exit 3'
  row_of tiny wrong 0 5 'echo wrong; exit 4'
  row_of tiny slow 0 1 'sleep 30'
  row_of tiny skip 0 5 'echo "no such tool"; exit 77'
  row_of tiny after 0 5 'cut -f1,3 "$SUMMARY" | grep -qx "slow.124"'
  row_of gate require-x 0 5 'exit 2'
  row_of gate later 0 5 "touch $tmp/later-ran"
  for s in a b c d e f; do row_of many "$s" 0 5 true; done
  row_of many g 0 5 'echo seventh'
} >"$tmp/plans.tsv"
# row DIR STEP: "expected|got|verdict" of STEP in DIR/summary.tsv
row() { awk -F'\t' -v s="$2" '$1 == s { print $2 "|" $3 "|" $5 }' "$1/summary.tsv"; }

start=$SECONDS
OUT=$tmp/out bash "$run" --plans "$tmp/plans.tsv" tiny >"$tmp/tiny.log" 2>&1
rc=$?
d=$tmp/out/tiny
[[ $rc == 1 ]] || no "tiny plan: exit $rc, expected 1 (a step gave another exit code)"
[[ $(row "$d" pass) == "0|0|ok" ]] || no "pass row: $(row "$d" pass)"
[[ $(row "$d" three) == "3|3|ok" ]] || no "three row (exit 3 expected and given): $(row "$d" three)"
[[ $(row "$d" wrong) == "0|4|UNEXPECTED (exit 4)" ]] || no "wrong row: $(row "$d" wrong)"
[[ $(row "$d" slow) == "0|124|TIMEOUT (1 s)" ]] || no "slow row: $(row "$d" slow)"
[[ $(row "$d" skip) == "0|77|skipped: no such tool" ]] || no "skip row: $(row "$d" skip)"
[[ $(row "$d" after) == "0|0|ok" ]] || no "a later step reads \$SUMMARY: $(row "$d" after)"
secs=$(awk -F'\t' '$1 == "slow" { print int($4) }' "$d/summary.tsv")
((${secs:-99} < 5)) || no "the 1 s timeout took ${secs:-?} s"
grep -q "step sees OUT=$d\$" "$d/pass.log" || no "pass.log: $(cat "$d/pass.log")"
grep -q "^wrong$" "$d/wrong.log" || no "wrong.log holds no output"
grep -q "RESULT: 2 of 6 steps did not give their expected exit code: wrong slow" "$d/summary.txt" ||
  no "summary.txt RESULT line: $(grep RESULT "$d/summary.txt")"
grep -q "RESULT: 2 of 6" "$tmp/tiny.log" || no "the summary is not printed"

OUT=$tmp/out bash "$run" --plans "$tmp/plans.tsv" tiny pass three >/dev/null 2>&1
rc=$?
[[ $rc == 0 ]] || no "steps pass three: exit $rc, expected 0"
[[ $(tail -n +2 "$d/summary.tsv" | cut -f1 | tr '\n' ' ') == "pass three " ]] ||
  no "selection ran: $(tail -n +2 "$d/summary.tsv" | cut -f1 | tr '\n' ' ')"

OUT=$tmp/out bash "$run" --plans "$tmp/plans.tsv" gate later >/dev/null 2>&1
rc=$?
[[ $rc == 1 ]] || no "gate plan: exit $rc, expected 1"
[[ -e $tmp/later-ran ]] && no "a step ran after its plan's require step failed"
[[ $(row "$tmp/out/gate" later) == "0|-|NOT RUN (requirement require-x failed)" ]] ||
  no "later row: $(row "$tmp/out/gate" later)"

out=$(OUT=$tmp/list bash "$run" --plans "$tmp/plans.tsv" --list gate 2>&1)
rc=$?
[[ $rc == 0 && $out == *"touch"* ]] || no "--list gate: exit $rc: $out"
[[ -e $tmp/later-ran || -e $tmp/list ]] && no "--list ran a step or wrote output"
bash "$run" --plans "$tmp/plans.tsv" --dry-run nosuch >/dev/null 2>&1
[[ $? == 2 ]] || no "an unknown plan is not exit 2"
printf 'bad\tstep\tzero\t5\ttrue\n' >"$tmp/bad.tsv"
bash "$run" --plans "$tmp/bad.tsv" --list >/dev/null 2>&1
[[ $? == 2 ]] || no "a malformed expected exit is not exit 2"

OUT=$tmp/out bash "$run" --plans "$tmp/plans.tsv" many >/dev/null 2>&1
rc=$?
[[ $rc == 0 ]] || no "many plan: exit $rc"
[[ $(ls "$tmp/out/many" | tr '\n' ' ') == "many.tar.xz summary.tsv summary.txt " ]] ||
  no "9 files are not packed: $(ls "$tmp/out/many" | tr '\n' ' ')"
tar -xJOf "$tmp/out/many/many.tar.xz" ./g.log 2>/dev/null | grep -q seventh || no "g.log is not in many.tar.xz"

out=$(bash "$run" --list 2>&1)
[[ $? == 0 && $out == *suite* ]] || no "the project's table does not parse: $out"
((fail)) || echo "device-run: all checks held ($((SECONDS - start)) s)"
exit $fail
