#!/usr/bin/env bash
# Issue 54 on a GPU host (one H200 is enough): gpumem's "largest batch that
# fits" checked the way its done-when asks. For each case (a program under a
# cap), bench/max_batch_truth.py runs, all at once where the GPU's memory and
# the host's cores allow:
#   gpumem reuse-sim max-batch --capacity CAP $GPUMEM_ARGS --json -- python3 prog.py --bs {batch} --steps 3
# (timed; room kept for GPUMEM_SLOTS of its runs at once), then its answer
# VERIFY more times and the next batch VERIFY_NEXT times under PyTorch's own
# cap (bench/cap_run.py), and the truth (doubling and bisection, 3 runs at
# once) for the cases the earlier truth (TRUTH_TGZ) lacks.
#
#   OUT=$OUT GPUMEM=.device/gpumem bash bench/max-batch-54.sh [quick|full|lightning]
#
#   quick      grad_accum (ResNet-18, gradient accumulation) under 6 GiB, gpumem
#              and its check, no truth search: a smoke test
#   full       the 8 kinds of program under 6 and 14 GiB (lightning_vit, bert_mlm,
#              t5_train, resnet50_amp, unet, gru_lm, llama_prefill, grad_accum),
#              side_stream under both, ddp_uneven under 4 GiB (2 ranks: on one GPU
#              over gloo where only one is visible, else one GPU a rank over NCCL)
#              and fsdp_uneven under 6 GiB (1 rank)
#   lightning  lightning_vit under 6 GiB: Lightning's BatchSizeFinder and gpumem
#              started together on the idle GPU, both timed; both answers checked
#              once both have ended
#
# Environment: GPUMEM_ARGS ("--jobs auto"; --json is added), GPUMEM_SLOTS (runs of
# gpumem's at once that room is kept for: 3, in lightning 12), VERIFY (5),
# VERIFY_NEXT (2), MAX_PROCS (processes at once: 12, for 16 cores), PROGRAMS,
# CAPS, TORCHRUN (override a mode's cases; TORCHRUN="" none), TRUTH_TGZ (the
# earlier truth; "" none), TOTAL (seconds the whole script may take: 560; no
# run starts after TOTAL-150 (DEADLINE), every run still going is stopped at
# TOTAL-40 (HARD_LIMIT)),
# WORK (/tmp/max-batch-54), TAG (a word added to the names in $OUT, for a mode
# run in parts: CAPS=6GiB TAG=6 ... full, then CAPS=14GiB TORCHRUN= TAG=14 ...
# full), DRY=1 (no GPU: made-up runs, bench/dryrun_cap_run.py, and
# bench/dryrun_gpumem.py as gpumem; FAKE_SLEEP seconds a run).
# $OUT gets NAME.tgz (the work folder: runs.jsonl, verify.jsonl, gpumem.jsonl,
# cases.jsonl, gpumem's documents, the runs' logs), NAME.md (the tables) and
# NAME.log (the driver's progress), NAME being max-batch-54-MODE[-TAG],
# refreshed every 30 s while it runs, so a call that runs out of time still
# brings them back.
set -u
MODE=${1:-quick}
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=max-batch-54-$MODE${TAG:+-$TAG}
OUT=${OUT:?OUT: the folder for the results}
WORK=${WORK:-/tmp/max-batch-54}
DRY=${DRY:-}
TOTAL=${TOTAL:-560}
VERIFY=${VERIFY:-5}
VERIFY_NEXT=${VERIFY_NEXT:-2}
MAX_PROCS=${MAX_PROCS:-12}
GPUMEM_ARGS=${GPUMEM_ARGS:---jobs auto}
TRUTH_TGZ=${TRUTH_TGZ-$HERE/results/2026-11-28-max-batch-w/run2-max-batch.tgz}
if [ -n "$DRY" ]; then
    GPUMEM=${GPUMEM:-$HERE/dryrun_gpumem.py}
    DRIVER_DRY=(--dry-run --gpus 0)
    NGPUS=1
else
    GPUMEM=${GPUMEM:-.device/gpumem}
    DRIVER_DRY=()
    NGPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
[ -x "$GPUMEM" ] || { echo "max-batch-54.sh: no gpumem binary at $GPUMEM (set GPUMEM)" >&2; exit 2; }
GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")

# The mode's cases and settings; PROGRAMS, CAPS and TORCHRUN override them.
MODE_ARGS=()
case $MODE in
    quick)
        DEF_PROGRAMS="$HERE/batch_programs/grad_accum.py"; DEF_CAPS=6GiB; DEF_TORCHRUN=
        GPUMEM_SLOTS=${GPUMEM_SLOTS:-3}
        MODE_ARGS+=(--no-truth) ;;  # short: gpumem and its check only
    full)
        DEF_PROGRAMS="lightning_vit bert_mlm t5_train resnet50_amp unet gru_lm llama_prefill $HERE/batch_programs/grad_accum.py side_stream"
        DEF_CAPS="6GiB 14GiB"
        DEF_TORCHRUN="ddp_uneven@4GiB:2 fsdp_uneven@6GiB:1"
        # Two ranks on two GPUs keep issue 47's case name (and its truth); on one GPU they share it.
        [ "${NGPUS:-0}" -ge 2 ] || MODE_ARGS+=(--share-gpu)
        GPUMEM_SLOTS=${GPUMEM_SLOTS:-3} ;;
    lightning)
        DEF_PROGRAMS=lightning_vit; DEF_CAPS=6GiB; DEF_TORCHRUN=
        GPUMEM_SLOTS=${GPUMEM_SLOTS:-12}
        MAX_PROCS=$((GPUMEM_SLOTS + 1))  # Lightning's one process beside gpumem's runs
        MODE_ARGS+=(--lightning --no-truth --verify-after-all) ;;
    *)
        echo "max-batch-54.sh: unknown mode '$MODE' (quick, full or lightning)" >&2; exit 2 ;;
esac
PROGRAMS=${PROGRAMS-$DEF_PROGRAMS}
CAPS=${CAPS-$DEF_CAPS}
TORCHRUN=${TORCHRUN-$DEF_TORCHRUN}

unset PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF  # the runs choose their own settings
rm -rf "$WORK"
mkdir -p "$WORK/run" "$OUT"
START=$SECONDS
{
    echo "max-batch-54.sh $MODE: $(date -u '+%F %T') UTC, gpumem $("$GPUMEM" --version 2>/dev/null | head -1), $(nproc) cores"
    nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv,noheader 2>/dev/null
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
    python3 -c 'import lightning; print("lightning", lightning.__version__)' 2>&1 | tail -1
} > "$WORK/run/machine.txt" 2>&1
cat "$WORK/run/machine.txt" >&2

TRUTH_ARGS=()
if [ -n "$TRUTH_TGZ" ]; then
    mkdir -p "$WORK/truth-from"
    tar xzf "$TRUTH_TGZ" -C "$WORK/truth-from" || { echo "max-batch-54.sh: cannot read $TRUTH_TGZ" >&2; exit 2; }
    for cases in "$WORK"/truth-from/*/cases.jsonl; do
        [ -f "$cases" ] && TRUTH_ARGS+=(--truth-from "$(dirname "$cases")")
    done
fi

# The tables and the work folder into $OUT (written aside, then moved: never half a file).
snapshot() {
    local table="python3 $HERE/max_batch_table.py"
    {
        echo "# issue 54: $MODE, $(date -u '+%F %T') UTC, $((SECONDS - START)) s in"
        echo; sed 's/^/    /' "$WORK/run/machine.txt"
        echo; echo "## gpumem's answers checked under PyTorch's own cap"; echo
        $table verify "$WORK/run"
        echo; echo "## gpumem against the truth"; echo
        $table compare "$WORK/run"
        echo; echo "## The truth (earlier runs' and this one's)"; echo
        $table truth "$WORK/run"
    } > "$OUT/$NAME.md.part" 2>&1 && mv "$OUT/$NAME.md.part" "$OUT/$NAME.md"
    cp "$WORK/driver.log" "$OUT/$NAME.log.part" 2>/dev/null && mv "$OUT/$NAME.log.part" "$OUT/$NAME.log"
    tar czf "$OUT/$NAME.tgz.part" -C "$WORK" --exclude='*.pickle' run driver.log 2>/dev/null && mv "$OUT/$NAME.tgz.part" "$OUT/$NAME.tgz"
}

python3 "$HERE/max_batch_truth.py" --work "$WORK/run" "${DRIVER_DRY[@]}" \
    --programs "$PROGRAMS" --caps "$CAPS" --torchrun "$TORCHRUN" "${MODE_ARGS[@]}" "${TRUTH_ARGS[@]}" \
    --gpumem "$GPUMEM" --gpumem-args "$GPUMEM_ARGS" --gpumem-slots "$GPUMEM_SLOTS" \
    --verify "$VERIFY" --verify-next "$VERIFY_NEXT" --max-procs "$MAX_PROCS" \
    --search-width 3 --below 0 --run-timeout 90 --gpumem-timeout $((TOTAL - 60)) --lightning-timeout 240 \
    --deadline "${DEADLINE:-$((TOTAL - 150))}" --hard-limit "${HARD_LIMIT:-$((TOTAL - 40))}" > "$WORK/driver.log" 2>&1 &
DRIVER=$!
trap 'kill -TERM $DRIVER 2>/dev/null; wait $DRIVER; snapshot; exit 143' TERM INT
while kill -0 $DRIVER 2>/dev/null; do
    for _ in $(seq 30); do
        kill -0 $DRIVER 2>/dev/null || break
        sleep 1
    done
    snapshot
done
wait $DRIVER
rc=$?
snapshot
echo "max-batch-54.sh $MODE: driver exit $rc after $((SECONDS - START)) s; $OUT/$NAME.{md,tgz,log}" >&2
tail -n 3 "$WORK/driver.log" >&2
grep -A2 '^[0-9]* answers of' "$OUT/$NAME.md" >&2
exit $rc
