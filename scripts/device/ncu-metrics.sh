#!/usr/bin/env bash
# Nsight Compute's counts for every launch of the kernels a regex names, as CSV for
# analysis/ncu_join.py: warp instructions, DRAM bytes read and written, time, cycles, grid.
#   scripts/device/ncu-metrics.sh CSV REGEX COMMAND...
# ncu's CSV goes to CSV; the command's own lines, mixed into ncu's standard output, never start
# with a quote, which is how ncu_join.py tells them apart. --clock-control none: the device VM
# does not allow clock locking. Exit: ncu's (127 when ncu is not installed).
set -u
csv=$1 regex=$2
shift 2
metrics=smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg,launch__grid_size
exec ncu --clock-control none --metrics "$metrics" --csv --page raw --print-units base \
  --kernel-name "$regex" "$@" >"$csv"
