#!/usr/bin/env bash
# Would catch: tqref's own process decoding metadata bytes of an untrusted HDF5 file again
# (finding 8, docs/reliability.md): libhdf5 1.10 reads some corrupt messages out of bounds without
# crashing every time, so only a memory checker sees it for sure; and a memory error in what
# tqref's process does decode itself, the chunks of the file's data (harness/io/chunk_decoder.cpp,
# described_file.cpp), valid and damaged. Each command runs under valgrind;
# the log of tqref's own process (not its validating child's: the child may read out of bounds,
# that is what it is for) must report no error. Before the fix, `check` of
# golden_attribute_message_oob_read.h5 gave an invalid read in H5Aexists in tqref's process.
# Also checks each command's exit code and that its message names the file.
# Usage: test_own_process_reads.sh TQREF_CLI SOURCE_DIR. Exit 77 (skipped) without valgrind.
set -uo pipefail
cli=$1 src=$2
command -v valgrind >/dev/null || { echo "skipped: valgrind not installed (scripts/setup.sh installs it)"; exit 77; }
reg=$src/tests/fuzz/regressions
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail=0
# expect CODE MESSAGE COMMAND FILE
expect() {
  local code=$1 says=$2 rc pid
  shift 2
  (cd "$d" && exec valgrind --log-file="$d/vg.%p.log" "$cli" "$@" >"$d/out.txt" 2>&1) &
  pid=$!
  wait $pid
  rc=$?
  if [[ $rc != "$code" ]] || ! grep -qF -- "$says" "$d/out.txt" ||
     ! grep -q "ERROR SUMMARY: 0 errors" "$d/vg.$pid.log"; then
    echo "FAIL: tqref $* exited $rc (expected $code, saying '$says'), valgrind in tqref's process:"
    cat "$d/out.txt" "$d/vg.$pid.log"
    fail=1
  else
    echo "ok: tqref $*: exit $rc, no valgrind error in tqref's process"
  fi
  rm -f "$d"/vg.*.log "$d/out.txt"
}
g=$reg/fuzz_golden_reader
expect 3 "golden_attribute_message_oob_read.h5:/" check "$g/golden_attribute_message_oob_read.h5"
expect 3 "corrupt file: unreadable object header" check "$g/golden_object_header_wild_allocation.h5"
expect 3 "/diagnostics: corrupt file" inspect "$g/golden_link_message_free_crash.h5"
expect 3 "193 bits of precision" trace-validate "$reg/fuzz_trace_reader/trace_integer_of_193_bits.h5"
expect 0 "cases" inspect "$src/data/golden/smoke.h5"
# tqref's own chunk decoder (harness/io/chunk_decoder.cpp) on the data of an untrusted file: a
# decode case judged whole, and one byte changed inside a stored chunk (its offset from h5py):
# refused as a checksum mismatch naming the dataset, with no memory error in tqref's process.
expect 0 "2 cases, 2 passed" check "$src/data/golden/smoke.h5" --backend model --no-explain \
  --filter 0003_decode_turbo2v_d256_kv1_gqa8_bs7_L3-19-23_win5_shared_vpad_gaussian
cp "$src/data/golden/smoke.h5" "$d/flipped.h5"
case=0001_writer_turbo2v_d256_kv1_bs7_t20_sequential_special_groups
at=$(/usr/bin/python3 -c "import h5py, sys; print(h5py.File(sys.argv[1], 'r')[sys.argv[2]].id.get_chunk_info(0).byte_offset)" \
  "$d/flipped.h5" "cases/$case/initial/k_cache")
printf '\xff' | dd of="$d/flipped.h5" bs=1 seek=$((at + 100)) conv=notrunc status=none
expect 3 "initial/k_cache: corrupt file: the data cannot be read (chunk 0 of 1" check "$d/flipped.h5" --backend model
exit $fail
