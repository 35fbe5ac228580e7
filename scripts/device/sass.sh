#!/usr/bin/env bash
# SASS of carried module files (cuobjdump), for the profile and gpuspeed plans.
#   scripts/device/sass.sh histogram ARCH FATBIN...  per kernel paged_decode_attn_bf16k_turbo3v
#                                                    (_gqa): count of each opcode, and TOTAL
#   scripts/device/sass.sh count FATBIN ARCH...      per kernel and ARCH: SASS instructions
# A file that is not there is left out. Exit 77 (skipped) when cuobjdump is not installed.
set -u
command -v cuobjdump >/dev/null || { echo "cuobjdump not installed"; exit 77; }
mode=$1
shift
case $mode in
  histogram)
    arch=$1
    shift
    for f in "$@"; do
      [[ -f $f ]] || continue
      echo "== $(basename "$f") ($arch)"
      cuobjdump -sass -arch "$arch" "$f" | awk '
        /Function : / { fn = $3 }
        fn ~ /^paged_decode_attn_bf16k_turbo3v(_gqa)?$/ && /^ +\/\*[0-9a-f]+\*\/ / {
          op = $2; if (op ~ /^@/) op = $3; sub(/\..*/, "", op); sub(/;$/, "", op); n[fn " " op]++; t[fn]++ }
        END { for (k in n) print n[k], k; for (f in t) print t[f], f, "TOTAL" }' | sort -k2,2 -k1,1nr
    done ;;
  count)
    f=$1
    shift
    [[ -f $f ]] || { echo "$f not carried"; exit 77; }
    for arch in "$@"; do
      cuobjdump -sass -arch "$arch" "$f" 2>/dev/null | awk -v a="$arch" '
        /Function : / { fn = $3 }
        /^ +\/\*[0-9a-f]+\*\/ / { n[fn]++ }
        END { for (f in n) print a, f, n[f], "SASS instructions" }'
    done ;;
  *) echo "usage: scripts/device/sass.sh histogram ARCH FATBIN... | count FATBIN ARCH..." >&2; exit 2 ;;
esac
