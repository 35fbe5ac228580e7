#!/usr/bin/env bash
# What a plan needs carried (scripts/device/plans.tsv, the require* steps): exit 0 when every
# named piece is there, else exit 2 naming what is missing and how to make it.
#   carry       the tqref binary ($TQ)
#   modules     our module files in $CARRY/modules (writers, decode_hdim128/256 fatbins)
#   mutants     the mutant modules' manifest ($CARRY/mutants/mutants.tsv)
#   faulty      the faulty decoder modules ($CARRY/faulty/faulty_{trap,runaway,illegal}.fatbin)
#   python-lib  the Python API's library ($CARRY/lib/libtqref_c.so)
#   one-kernel  the six one-kernel decoder modules ($CARRY/one_kernel/*.fatbin)
# Usage (from the runner, which sets TQ and CARRY): scripts/device/require.sh WHAT...
set -u
carry="run scripts/device-carry.sh BUILD here and carry .device-carry"
missing=0
need() {  # need FILE HOW
  [[ -e $1 ]] && return
  echo "missing $1: $2" >&2
  missing=1
}
for what in "$@"; do
  case $what in
    carry) [[ -x $TQ ]] || { echo "missing $TQ: $carry" >&2; missing=1; } ;;
    modules)
      for m in writers decode_hdim128 decode_hdim256; do
        need "$CARRY/modules/$m.fatbin" "build the target tqref, then $carry"
      done ;;
    mutants) need "$CARRY/mutants/mutants.tsv" "build the target tqref_mutant_modules, then $carry" ;;
    faulty)
      for f in trap runaway illegal; do
        need "$CARRY/faulty/faulty_$f.fatbin" "build the target tqref_faulty_modules, then $carry"
      done ;;
    python-lib) need "$CARRY/lib/libtqref_c.so" "build the target tqref_c, then $carry" ;;
    one-kernel)
      for b in 2 3 4; do
        for h in 128 256; do
          need "$CARRY/one_kernel/paged_decode_attn_bf16k_turbo${b}v.hdim$h.fatbin" \
            "build the target tqref_one_kernel_modules, then $carry"
        done
      done ;;
    *) echo "require.sh: unknown requirement '$what'" >&2; exit 2 ;;
  esac
done
((missing)) && exit 2
echo "carried: $*"
