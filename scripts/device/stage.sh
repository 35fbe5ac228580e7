#!/usr/bin/env bash
# Copies module files into one folder, for `tqref conform --modules DIR`.
#   scripts/device/stage.sh DIR ITEM...
# An ITEM is a path, `mutant:ID` (every module file of mutant ID) or `mutant:ID.MODULE` (that
# module of it, e.g. mutant:6.decode_hdim128), looked up in $CARRY/mutants/mutants.tsv (columns
# id, short name, module, file). Prints each file copied; exit 1 when an item is missing (the
# others are still copied, so that a conform run shows what the missing one would have).
set -u
dir=$1
shift
mkdir -p "$dir" || exit 2
manifest=$CARRY/mutants/mutants.tsv
status=0
for item in "$@"; do
  files=("$item")
  if [[ $item == mutant:* ]]; then
    spec=${item#mutant:} id=${item#mutant:} module=""
    [[ $spec == *.* ]] && id=${spec%%.*} module=${spec#*.}
    mapfile -t files < <(awk -F'\t' -v id="$id" -v m="$module" \
      '$1 == id && (m == "" || $3 == m) { print $4 }' "$manifest" 2>/dev/null | sed "s|^|$CARRY/mutants/|")
    ((${#files[@]})) || { echo "missing: no module of $item in $manifest" >&2; status=1; continue; }
  fi
  for f in "${files[@]}"; do
    if cp "$f" "$dir/" 2>/dev/null; then echo "staged $(basename "$f")"; else echo "missing module $f" >&2; status=1; fi
  done
done
exit $status
