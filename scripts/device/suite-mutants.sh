#!/usr/bin/env bash
# Every mutant module against the golden files on the GPU (the suite plan's last step;
# docs/mutants.md). Per mutant build of $CARRY/mutants/mutants.tsv: smoke first, survivors against
# standard (the THRESH = 2^-10 builds: the thresh-pow2m10 file instead of both), survivors of
# both at level I on the first file. Exit 1 (mismatch) or 6 (GPU fault) = caught; 0 = survived;
# 3 = no case for that build (not counted). Mutant 5 (factor >= THRESH) at the default THRESH is
# equivalent on sm_90: no EXPF output equals 1e-3f there (docs/decode-model.md item 8), so > and
# >= agree on every input; those two builds are listed but not counted. The offset and
# build-flag mutants (21-27) need the pools and flags suites and a passing control: the
# launches plan judges them.
# Needs $SCRATCH/standard.h5 and $SCRATCH/thresh-pow2m10.h5 (the plan's generate steps); writes
# $OUT/mutants.tsv (id, short, module, smoke_rc, standard_rc, verdict) and prints it.
# TQREF_MUTANT_IDS="13 14 ..." runs only those mutants (default: all). A build that would start
# with less than 15 s of the plan's budget left is "not run (time)".
# Exit 0 when every build run was caught and none was left unrun, 1 otherwise.
set -u
left() { echo $((TQREF_DEVICE_DEADLINE - EPOCHSECONDS)); }
thr_value=0.0009765625   # THRESH = 2^-10, a reachable factor
smoke=$SMOKE standard=$SCRATCH/standard.h5 thrfile=$SCRATCH/thresh-pow2m10.h5
mt=$OUT/mutants.tsv
tmp=$SCRATCH/mutant.out
printf 'id\tshort\tmodule\tsmoke_rc\tstandard_rc\tverdict\n' >"$mt"
caught=0 total=0 equivalent=0 notrun=0 bad=0
wanted=" ${TQREF_MUTANT_IDS:-} "
while IFS=$'\t' read -r id short module file _; do
  [[ $id == \#* || -z $id ]] && continue
  [[ $wanted == "  " || $wanted == *" $id "* ]] || continue
  if [[ $short == offset32 || $short == plain_* ]]; then
    printf '%s\t%s\t%s\t-\t-\tnot run here (the launches plan)\n' "$id" "$short" "$module" >>"$mt"; continue
  fi
  args=(--module "$CARRY/mutants/$file")
  first=$smoke second=$standard firstname=smoke secondname=standard
  case $module in
    writers) args+=(--kind writer) ;;
    decode_hdim128 | decode_hdim256) args+=(--kind decode --hdim "${module#decode_hdim}") ;;
    decode_hdim*_thr_pow2m10)
      h=${module#decode_hdim}; args+=(--kind decode --hdim "${h%%_*}" --threshold "$thr_value")
      first=$thrfile second="" firstname=thresh-pow2m10 ;;
  esac
  if (($(left) < 15)); then
    printf '%s\t%s\t%s\t-\t-\tnot run (time)\n' "$id" "$short" "$module" >>"$mt"; notrun=$((notrun + 1)); continue
  fi
  if [[ ! -f $first ]]; then
    printf '%s\t%s\t%s\t-\t-\tnot run (no %s file)\n' "$id" "$short" "$module" "$firstname" >>"$mt"; notrun=$((notrun + 1)); continue
  fi
  total=$((total + 1))
  echo "=== mutant $id $short $module"
  timeout --kill-after=5 60 "$TQ" check "$first" --backend gpu --show 1 "${args[@]}" >"$tmp" 2>&1
  rs=$? rt=-
  head -c 4000 "$tmp"; tail -n 1 "$tmp"
  if [[ $rs == 0 && -n $second && -f $second ]] && (($(left) > 30)); then
    timeout --kill-after=5 90 "$TQ" check "$second" --backend gpu --show 1 "${args[@]}" >"$tmp" 2>&1
    rt=$?
    head -c 4000 "$tmp"; tail -n 1 "$tmp"
  fi
  # Survivors of W/D get level I on the same file (the invariance mutants 18-20 are made to pass
  # W/D and fail only there).
  ri=-
  if [[ $rs == 0 && ($rt == 0 || $rt == -) ]] && (($(left) > 20)); then
    timeout --kill-after=5 60 "$TQ" check "$first" --backend gpu --level I "${args[@]}" >"$tmp" 2>&1
    ri=$?
    grep -m 2 "anatomy:" "$tmp"; tail -n 1 "$tmp"
  fi
  if [[ $rs == 1 || $rs == 6 ]]; then v="caught ($firstname)"
  elif [[ $rt == 1 || $rt == 6 ]]; then v="caught ($secondname)"
  elif [[ $ri == 1 || $ri == 6 ]]; then v="caught (level I, $firstname)"
  elif [[ $rs == 3 && ($rt == - || $rt == 3) ]]; then v="n/a (no case for this build)"; total=$((total - 1))
  elif [[ $rs == 0 && ($rt == 0 || $rt == -) && $short == thresh_ge && $module == decode_hdim[0-9]* && $module != *_thr_* ]]; then
    v="equivalent at the default THRESH on sm_90 (not counted)"; total=$((total - 1)); equivalent=$((equivalent + 1))
  elif [[ $rs == 0 && ($rt == 0 || $rt == -) ]]; then v=SURVIVED; bad=$((bad + 1))
  else v="error (rc $rs/$rt)"; bad=$((bad + 1)); fi
  [[ $v == caught* ]] && caught=$((caught + 1))
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$short" "$module" "$rs" "$rt" "$v" >>"$mt"
done <"$CARRY/mutants/mutants.tsv"
echo
column -t -s $'\t' "$mt" 2>/dev/null || cat "$mt"
echo "mutants: caught $caught of $total applicable builds run ($equivalent equivalent, not counted; $notrun not run)"
((bad == 0 && notrun == 0))
