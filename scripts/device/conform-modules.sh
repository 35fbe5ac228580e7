#!/usr/bin/env bash
# `tqref conform` over a folder of module files, level I off, every decoder's HDIM stated (not
# probed: a broken decoder must not turn into "HDIM unknown", exit 3). The launches plan's runs.
#   scripts/device/conform-modules.sh NAME SUITES ITEM...
# ITEMs as scripts/device/stage.sh takes them (a path, mutant:ID); the folder is
# $SCRATCH/mods-NAME, the report $SCRATCH/conform-NAME. Exit: tqref conform's (a missing module is
# named and the run goes on without it).
set -u
name=$1 suites=$2
shift 2
dir=$SCRATCH/mods-$name
"$(dirname "$0")/stage.sh" "$dir" "$@"
hdim=()
for f in "$dir"/*; do
  b=$(basename "$f")
  [[ $b == *decode_hdim128* ]] && hdim+=(--hdim "$b=128")
  [[ $b == *decode_hdim256* ]] && hdim+=(--hdim "$b=256")
done
exec "$TQ" conform --modules "$dir" --suites "$suites" --no-invariance "${hdim[@]}" --out "$SCRATCH/conform-$name"
