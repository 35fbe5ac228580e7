#!/usr/bin/env bash
# Compares two golden (or trace) HDF5 files in data, ignoring the build provenance that differs
# between builds of the same sources: the root attributes tqref_version and git_commit
# (docs/golden-schema.md). Every dataset, every group's attributes and every other root attribute
# must be equal.
# Usage: bash scripts/golden-diff.sh A.h5 B.h5
# Exit: 0 identical in data, 1 different (what differs is printed), 2 usage or unreadable file.
set -uo pipefail
if (($# != 2)); then
  echo "usage: bash scripts/golden-diff.sh A.h5 B.h5" >&2
  exit 2
fi
a=$1 b=$2
for f in "$a" "$b"; do
  if ! h5dump -H "$f" >/dev/null 2>&1; then
    echo "golden-diff: $f: not a readable HDF5 file" >&2
    exit 2
  fi
done
readonly PROVENANCE="tqref_version git_commit"

# Root attribute names of a file, one per line.
root_attrs() { h5dump -A -H "$1" | sed -n 's/^   ATTRIBUTE "\([^"]*\)".*/\1/p' | sort; }
# One root attribute's type and value, without the file name line.
root_attr() { h5dump -a "/$2" "$1" | tail -n +2; }

status=0
if ! h5diff --exclude-attribute / "$a" "$b" >/dev/null 2>&1; then
  # h5diff's report names the objects and elements that differ (root attributes excluded).
  h5diff -r --exclude-attribute / "$a" "$b" | head -n 40
  status=1
fi
names_a=$(root_attrs "$a") names_b=$(root_attrs "$b")
if [[ "$names_a" != "$names_b" ]]; then
  echo "golden-diff: the root attributes differ in name:"
  diff <(echo "$names_a") <(echo "$names_b") | sed 's/^/  /'
  status=1
fi
for name in $names_a; do
  [[ " $PROVENANCE " == *" $name "* ]] && continue
  grep -qx "$name" <<<"$names_b" || continue
  if [[ "$(root_attr "$a" "$name")" != "$(root_attr "$b" "$name")" ]]; then
    echo "golden-diff: root attribute $name differs"
    status=1
  fi
done
if ((status == 0)); then
  echo "golden-diff: $a and $b are identical in data (provenance $PROVENANCE not compared)"
fi
exit "$status"
