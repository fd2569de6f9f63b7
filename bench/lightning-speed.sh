#!/usr/bin/env bash
# Issue 54's speed target on one GPU: where the wall time of a max-batch
# search goes for a Lightning program (batch_programs_w/lightning_vit.py),
# then gpumem beside Lightning's BatchSizeFinder (max-batch-54.sh lightning).
#   OUT=$OUT GPUMEM=.device/gpumem bash bench/lightning-speed.sh
# $OUT gets lightning-speed.txt (each timing: `import lightning` alone, one
# run alone, N runs at once with and without OMP_NUM_THREADS, one run under
# `gpumem reuse-sim record`) and max-batch-54-lightning.* (the race).
# Timings are wall seconds (python3's clock: the device has no bc).
set -u
OUT=${OUT:?set OUT}
GPUMEM=${GPUMEM:-.device/gpumem}
cd "$(dirname "$0")/.."
P=bench/batch_programs_w/lightning_vit.py
log=$OUT/lightning-speed.txt
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
# secs START: the seconds since START, one decimal.
secs() { python3 -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$1"; }
timed() {  # timed LABEL CMD...: one line, the label, the exit status, the seconds
    local label=$1 start rc; shift
    start=$(now); "$@" >/dev/null 2>&1; rc=$?
    echo "$label: exit $rc, $(secs "$start") s" >>"$log"
}
together() {  # together LABEL N CMD...: N at once, each one's seconds, and the whole
    local label=$1 n=$2 start pids=() k; shift 2
    start=$(now)
    for k in $(seq 1 "$n"); do
        ( s=$(now); "$@" >/dev/null 2>&1; echo "  $label #$k: exit $?, $(secs "$s") s" >>"$log" ) & pids+=($!)
    done
    wait "${pids[@]}"
    echo "$label: $n at once, all done in $(secs "$start") s" >>"$log"
}
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; "$GPUMEM" --version; } >"$log" 2>&1
timed "import lightning (first)" python3 -c 'import lightning'
timed "import lightning (again)" python3 -c 'import lightning'
timed "import torch" python3 -c 'import torch'
timed "one run alone, bs 64, 3 steps" python3 "$P" --bs 64 --steps 3
timed "one run alone, bs 64, 3 steps (again)" python3 "$P" --bs 64 --steps 3
timed "one recorded run, bs 64 (gpumem reuse-sim record --capacity 6GiB)" \
    "$GPUMEM" reuse-sim record --capacity 6GiB -o /tmp/ls-rec.json -- python3 "$P" --bs 64 --steps 3
together "8 runs, bs 64" 8 python3 "$P" --bs 64 --steps 3
together "8 runs, bs 64, OMP_NUM_THREADS=2" 8 env OMP_NUM_THREADS=2 python3 "$P" --bs 64 --steps 3
together "4 runs, bs 64, OMP_NUM_THREADS=4" 4 env OMP_NUM_THREADS=4 python3 "$P" --bs 64 --steps 3
cat "$log"
OUT=$OUT GPUMEM=$GPUMEM TOTAL=${TOTAL:-240} bash bench/max-batch-54.sh lightning
