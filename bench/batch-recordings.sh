#!/usr/bin/env bash
# Issue 37's data: each program of bench/batch_programs/ recorded at many
# batches under its cap, the recordings kept, so that the max-batch model
# can be measured against the real runs on a machine with no GPU
# (bench/max-batch-offline.sh). Each recording is one real run:
#   gpumem reuse-sim record -o DIR/PROG/bsB.pickle --capacity CAP -- python3 PROG.py --bs B --steps S
# and its .stats.json says whether the run ran out of memory (num_ooms,
# program_ooms), its .exit the program's exit status.
#
#   GPUMEM=path/to/gpumem OUT=dir bash bench/batch-recordings.sh
# Environment: BATCHES ("prog=4,8,100 ..."; defaults below, chosen around
# each program's largest batch under its cap on an H200, 2026-11-27), CAPS
# (as max-batch.sh's), STEPS (3), GPUS (indices, default every GPU),
# PER_GPU (3 runs at a time on each GPU), RUN_TIMEOUT (120 s),
# WORK (/tmp/batch-recordings). $OUT gets batch-recordings.tar.xz.
set -u
GPUMEM=${GPUMEM:-$PWD/.device/gpumem}
OUT=${OUT:-/tmp/batch-recordings-out}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-/tmp/batch-recordings}
STEPS=${STEPS:-3}
PER_GPU=${PER_GPU:-3}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
DEFAULT_CAPS="mlp=6GiB transformer_encoder=8GiB cnn_bn=6GiB gpt2_train=8GiB timm_model=8GiB lstm=6GiB detection_eval=6GiB grad_accum=6GiB"
CAPS="${CAPS:-} $DEFAULT_CAPS"
DEFAULT_BATCHES="mlp=4,8,50,67,100,133,150,190,198,199,200,201,202
transformer_encoder=4,8,16,22,32,43,48,60,63,64,65,66,67
cnn_bn=4,8,70,94,140,187,210,270,278,279,280,281,282,283
gpt2_train=4,8,7,9,13,18,20,24,25,26,27,28,29
timm_model=4,8,32,44,64,87,96,120,128,129,130,131,132,133
lstm=4,8,125,167,250,333,375,480,497,498,499,500,501,502
detection_eval=4,8,7,10,14,19,20,24,26,27,28,29,30,31
grad_accum=4,8,207,276,414,552,621,800,816,820,824,826,827,828,829,830,831,832"
BATCHES=${BATCHES:-$DEFAULT_BATCHES}
unset PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
[ -x "$GPUMEM" ] || { echo "batch-recordings.sh: no gpumem binary (set GPUMEM)" >&2; exit 2; }
GPUS=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ' | tr '\n' ' ')}
[ -n "${GPUS// /}" ] || GPUS=0
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"
{
    echo "batch-recordings.sh: $(date -u '+%F %T') UTC, $("$GPUMEM" --version 2>/dev/null | head -1), $STEPS steps a run"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>/dev/null
    python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1
} > "$WORK/machine.txt"

# One job a line: GPU-slot PROGRAM CAP BATCH; slots are dealt round robin.
jobs_file=$WORK/jobs.txt
: > "$jobs_file"
read -r -a gpus <<< "$GPUS"
n=0
while read -r line; do
    [ -n "$line" ] || continue
    prog=${line%%=*}
    cap=""
    for entry in $CAPS; do [ "${entry%%=*}" = "$prog" ] && [ -z "$cap" ] && cap=${entry#*=}; done
    mkdir -p "$WORK/$prog"
    echo "$cap" > "$WORK/$prog/cap.txt"
    IFS=, read -r -a bs <<< "${line#*=}"
    for b in "${bs[@]}"; do
        echo "${gpus[$((n % ${#gpus[@]}))]} $prog $cap $b" >> "$jobs_file"
        n=$((n + 1))
    done
done <<< "$BATCHES"

one() {  # GPU PROGRAM CAP BATCH
    local base=$WORK/$2/bs$4 t0=$EPOCHREALTIME
    timeout -k 10 "$RUN_TIMEOUT" env CUDA_VISIBLE_DEVICES="$1" "$GPUMEM" reuse-sim record -o "$base.pickle" --capacity "$3" \
        -- python3 "$HERE/batch_programs/$2.py" --bs "$4" --steps "$STEPS" < /dev/null > "$base.out" 2> "$base.err"
    echo $? > "$base.exit"
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f\n", b - a }' > "$base.wall"
    echo "$2 bs $4: exit $(cat "$base.exit"), $(cat "$base.wall") s" >&2
}
export -f one
export WORK GPUMEM HERE STEPS RUN_TIMEOUT
xargs -P "$(( ${#gpus[@]} * PER_GPU ))" -L 1 bash -c 'one "$@"' _ < "$jobs_file"
tar cJf "$OUT/batch-recordings.tar.xz" -C "$(dirname "$WORK")" "$(basename "$WORK")"
ls -la "$OUT"
