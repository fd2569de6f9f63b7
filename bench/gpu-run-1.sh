#!/usr/bin/env bash
# The first GPU run of issues 47 and 44, in one call of at most 9 minutes on
# a machine of several GPUs (built for 4 H100s or H200s):
#   1. the truth of issue 47 (bench/max_batch_truth.py): for every program of
#      bench/batch_programs_w/ under caps of 6 and 14 GiB, the largest batch
#      that runs under PyTorch's own cap (bench/cap_run.py, the bytes
#      gpumem's --capacity sets), by doubling from 8 then bisection, many
#      searches at once across the GPUs; the 8 batches below each answer;
#      and Lightning's BatchSizeFinder (binsearch, 3 steps a trial) on
#      lightning_vit under each cap, the whole process timed;
#   2. beside it, on the last GPU (16 GiB kept free for it), issue 44's
#      recordings (bench/record-allocator-features.sh): each program of
#      bench/allocator_features/ recorded uncapped and under 50 % and 80 % of
#      its peak reserved, each replayed, the five counters compared.
#
#   GPUMEM=.device/gpumem OUT=$OUT bash bench/gpu-run-1.sh
#
# Budget (seconds from the start; environment overrides): TRUTH_DEADLINE
# 330 (no truth run starts after it), TRUTH_HARD 400 (every truth run still
# going is killed), FEATURES_DEADLINE 300, RUN_TIMEOUT 60 (a truth run);
# everything is tarred by about 420 s. $OUT gets at most 5 files:
# gpu-run-1.log, truth.md, truth.tgz (runs.jsonl, cases.jsonl,
# lightning.jsonl, logs/ with each run's last 4 KiB of output),
# allocator-features.md, allocator-features.tgz. The truth is also
# refreshed into $OUT every 30 s, so a run cut short still leaves it.
set -u
OUT=${OUT:?set OUT}
GPUMEM=${GPUMEM:-.device/gpumem}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
[ -x "$GPUMEM" ] && GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")
WORK=${WORK:-/tmp/gpu-run-1}
rm -rf "$WORK"
mkdir -p "$WORK"
LOG=$OUT/gpu-run-1.log
exec 2> >(tee -a "$LOG" >&2)
START=$SECONDS
TRUTH_DEADLINE=${TRUTH_DEADLINE:-330}
TRUTH_HARD=${TRUTH_HARD:-400}
FEATURES_DEADLINE=${FEATURES_DEADLINE:-300}
RUN_TIMEOUT=${RUN_TIMEOUT:-60}
CAPS=${CAPS:-"6GiB 14GiB"}
if [ -z "${GPUS:-}" ]; then
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then GPUS=${CUDA_VISIBLE_DEVICES//,/ }
    else GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ' | tr '\n' ' '); fi
fi
[ -n "${GPUS// /}" ] || GPUS=0
# shellcheck disable=SC2086,SC2116  # one space between the indices, none at the ends
GPUS=$(echo $GPUS)
LAST_GPU=${GPUS##* }
{
    echo "gpu-run-1.sh: $(date -u '+%F %T') UTC, GPUs: $GPUS, gpumem: $("$GPUMEM" --version 2>/dev/null | head -1)"
    nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>/dev/null
    python3 -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])' 2>&1 | tail -1
    python3 -c 'import transformers, timm, torchvision; print("transformers", transformers.__version__, "timm", timm.__version__, "torchvision", torchvision.__version__)' 2>&1 | tail -1
    python3 -c 'import lightning; print("lightning", lightning.__version__)' 2>&1 | tail -1
} >&2

snapshot() {
    tar czf "$OUT/truth.tgz.part" -C "$WORK" truth 2>/dev/null && mv -f "$OUT/truth.tgz.part" "$OUT/truth.tgz"
}

# 2. Issue 44's recordings, on the last GPU.
feature_pid=
if [ -x "$GPUMEM" ]; then
    CUDA_VISIBLE_DEVICES=$LAST_GPU timeout -k 10 "$FEATURES_DEADLINE" \
        bash "$HERE/record-allocator-features.sh" "$GPUMEM" "$WORK/allocator-features" > "$WORK/features.stdout" &
    feature_pid=$!
else
    echo "gpu-run-1.sh: no gpumem binary at $GPUMEM: issue 44's recordings not made" >&2
fi

# 1. The truth and Lightning's finder.
python3 "$HERE/max_batch_truth.py" --work "$WORK/truth" --programs-dir "${PROGRAMS_DIR:-$HERE/batch_programs_w}" --gpus "$GPUS" --caps "$CAPS" --lightning \
    --reserve "$LAST_GPU:16GiB" --deadline "$TRUTH_DEADLINE" --hard-limit "$TRUTH_HARD" --run-timeout "$RUN_TIMEOUT" \
    --below "${BELOW:-8}" &
truth_pid=$!
while kill -0 "$truth_pid" 2>/dev/null; do
    sleep 5
    [ $(((SECONDS - START) % 30)) -lt 5 ] && snapshot
    if [ $((SECONDS - START)) -ge $((TRUTH_HARD + 20)) ]; then
        echo "gpu-run-1.sh: the truth driver outlived its hard limit: stopped" >&2
        kill -TERM "$truth_pid" 2>/dev/null
        sleep 5
        kill -KILL "$truth_pid" 2>/dev/null
        break
    fi
done
wait "$truth_pid" 2>/dev/null
[ -f "$WORK/truth/truth.md" ] || python3 "$HERE/max_batch_table.py" truth "$WORK/truth" > "$WORK/truth/truth.md"
cp "$WORK/truth/truth.md" "$OUT/truth.md"
snapshot
if [ -n "$feature_pid" ]; then
    while kill -0 "$feature_pid" 2>/dev/null && [ $((SECONDS - START)) -lt $((TRUTH_HARD + 10)) ]; do sleep 2; done
    if kill -0 "$feature_pid" 2>/dev/null; then
        echo "gpu-run-1.sh: the allocator-feature recordings outlived the budget: stopped" >&2
        pkill -TERM -P "$feature_pid" 2>/dev/null
        kill -TERM "$feature_pid" 2>/dev/null
    fi
    cp "$WORK/allocator-features/summary.md" "$OUT/allocator-features.md" 2>/dev/null
    tar czf "$OUT/allocator-features.tgz" -C "$WORK" allocator-features 2>/dev/null
fi
echo "gpu-run-1.sh: done in $((SECONDS - START)) s" >&2
cat "$OUT/truth.md"
[ -f "$OUT/allocator-features.md" ] && cat "$OUT/allocator-features.md"
exit 0
