#!/usr/bin/env bash
# The second GPU run of issue 47, in one call of at most 9 minutes on a
# machine of several GPUs (built for 4 H100s or H200s): gpumem's
#   reuse-sim max-batch --capacity CAP --full-grid --confirm [--max-runs N] --json -- python3 prog.py --bs {batch} --steps 3
# for every program of bench/batch_programs_w/ under caps of 6 and 14 GiB,
# and under torchrun (2 ranks, rank 1 twice the batch:
# bench/torchrun_programs/ddp_uneven.py under 4 GiB, fsdp_uneven.py under
# 6 GiB), each timed; Lightning's BatchSizeFinder again on lightning_vit
# (timed beside gpumem's, under the same load); the truth of the torchrun
# cases (both ranks under the cap, an OOM on any rank an OOM), and of
# every case that TRUTH_FROM lacks; then the table of issue 47: answers
# against the truth (exact / one low / above the search at a batch that ran
# / WRONG-HIGH), median real runs and wall time beside the search's and
# Lightning's (bench/max_batch_table.py compare).
#
#   GPUMEM=.device/gpumem OUT=$OUT TRUTH_FROM=path/to/truth.tgz bash bench/gpu-run-2.sh
#
# TRUTH_FROM: the first run's truth (bench/gpu-run-1.sh's $OUT/truth.tgz, or
# the folder in it); without it every truth search runs here too, which
# needs more than 9 minutes of a 4-GPU machine to finish for every case.
# Environment: MAX_RUNS (8: passed as --max-runs where gpumem has it),
# GPUMEM_ARGS (default "--full-grid --confirm" and that), CAPS, TORCHRUN, GPUS,
# DEADLINE (360 s: nothing starts after it), HARD_LIMIT (440 s: everything
# still going is stopped), GPUMEM_TIMEOUT (330 s a gpumem answer), BELOW (4).
# $OUT gets gpu-run-2.log, max-batch.md (the table), max-batch.tgz (every
# raw result: gpumem.jsonl and gpumem's documents, cases.jsonl, runs.jsonl,
# lightning.jsonl, logs), refreshed every 30 s.
set -u
OUT=${OUT:?set OUT}
GPUMEM=${GPUMEM:-.device/gpumem}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$GPUMEM" ] || { echo "gpu-run-2.sh: no gpumem binary at $GPUMEM (set GPUMEM)" >&2; exit 2; }
GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")
mkdir -p "$OUT"
WORK=${WORK:-/tmp/gpu-run-2}
rm -rf "$WORK"
mkdir -p "$WORK"
exec 2> >(tee -a "$OUT/gpu-run-2.log" >&2)
START=$SECONDS
DEADLINE=${DEADLINE:-360}
HARD_LIMIT=${HARD_LIMIT:-440}
CAPS=${CAPS:-"6GiB 14GiB"}
TORCHRUN=${TORCHRUN-"ddp_uneven@4GiB fsdp_uneven@6GiB"}
GPUMEM_ARGS=${GPUMEM_ARGS:-"--full-grid --confirm"}
if "$GPUMEM" reuse-sim max-batch --help 2>&1 | grep -q -- '--max-runs'; then
    GPUMEM_ARGS="$GPUMEM_ARGS --max-runs ${MAX_RUNS:-8}"
else
    echo "gpu-run-2.sh: this gpumem has no --max-runs: its own limits apply" >&2
fi
if [ -z "${GPUS:-}" ]; then
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then GPUS=${CUDA_VISIBLE_DEVICES//,/ }
    else GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ' | tr '\n' ' '); fi
fi
[ -n "${GPUS// /}" ] || GPUS=0
{
    echo "$(date -u '+%F %T') UTC, GPUs: $GPUS, gpumem: $("$GPUMEM" --version 2>/dev/null | head -1), args: $GPUMEM_ARGS"
    nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>/dev/null
    python3 -c 'import torch, sys; print("torch", torch.__version__, "python", sys.version.split()[0])' 2>&1 | tail -1
} > "$WORK/machine.txt"
sed 's/^/gpu-run-2.sh: /' "$WORK/machine.txt" >&2

truth_args=()
if [ -n "${TRUTH_FROM:-}" ]; then
    if [ -f "$TRUTH_FROM" ]; then  # the first run's truth.tgz: its folder truth/
        mkdir -p "$WORK/truth-from"
        tar xzf "$TRUTH_FROM" -C "$WORK/truth-from" || { echo "gpu-run-2.sh: cannot read $TRUTH_FROM" >&2; exit 2; }
        TRUTH_FROM=$(dirname "$(find "$WORK/truth-from" -name cases.jsonl | head -1)")
    fi
    [ -f "$TRUTH_FROM/cases.jsonl" ] || { echo "gpu-run-2.sh: no cases.jsonl in $TRUTH_FROM" >&2; exit 2; }
    truth_args=(--truth-from "$TRUTH_FROM")
fi
TORCH_NPROC=${NPROC:-2}
# shellcheck disable=SC2086  # the list is split into words on purpose
ngpus=$(echo $GPUS | wc -w)
[ "$ngpus" -ge "$TORCH_NPROC" ] || { echo "gpu-run-2.sh: $ngpus GPU(s): no torchrun cases (they need $TORCH_NPROC)" >&2; TORCHRUN=""; }

snapshot() {
    cp "$WORK/machine.txt" "$WORK/run/" 2>/dev/null
    tar czf "$OUT/max-batch.tgz.part" -C "$WORK" run 2>/dev/null && mv -f "$OUT/max-batch.tgz.part" "$OUT/max-batch.tgz"
}
python3 "$HERE/max_batch_truth.py" --work "$WORK/run" --programs-dir "${PROGRAMS_DIR:-$HERE/batch_programs_w}" \
    ${PROGRAMS:+--programs "$PROGRAMS"} --caps "$CAPS" --torchrun "$TORCHRUN" --nproc "$TORCH_NPROC" --gpus "$GPUS" --lightning \
    --gpumem "$GPUMEM" --gpumem-args "$GPUMEM_ARGS" --gpumem-timeout "${GPUMEM_TIMEOUT:-330}" "${truth_args[@]}" \
    --below "${BELOW:-4}" --deadline "$DEADLINE" --hard-limit "$HARD_LIMIT" --run-timeout "${RUN_TIMEOUT:-60}" &
pid=$!
while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    [ $(((SECONDS - START) % 30)) -lt 5 ] && snapshot
    if [ $((SECONDS - START)) -ge $((HARD_LIMIT + 25)) ]; then
        echo "gpu-run-2.sh: the driver outlived its hard limit: stopped" >&2
        kill -TERM "$pid" 2>/dev/null
        sleep 10
        kill -KILL "$pid" 2>/dev/null
        break
    fi
done
wait "$pid" 2>/dev/null
if [ ! -s "$WORK/run/max-batch.md" ]; then
    python3 "$HERE/max_batch_table.py" compare "$WORK/run" > "$WORK/run/max-batch.md"
fi
{
    echo "# The largest batch that fits: gpumem reuse-sim max-batch against a doubling-and-bisection search under PyTorch's own cap (issue 47)"
    echo
    sed 's/^/- /' "$WORK/machine.txt"
    echo "- gpumem $GPUMEM_ARGS; 3 steps a run; the truth: doubling from 8, bisection to 1 batch, cap_run.py (set_per_process_memory_fraction to gpumem's bytes), an OOM: an OutOfMemoryError or num_ooms > 0 (on any rank); ${TRUTH_FROM:+truth from $TRUTH_FROM; }$((SECONDS - START)) s in all"
    echo
    cat "$WORK/run/max-batch.md"
} > "$OUT/max-batch.md"
cp "$OUT/max-batch.md" "$WORK/run/max-batch.md"
snapshot
echo "gpu-run-2.sh: done in $((SECONDS - START)) s" >&2
cat "$OUT/max-batch.md"
exit 0
