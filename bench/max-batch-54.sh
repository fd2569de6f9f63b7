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
#   OUT=$OUT GPUMEM=.device/gpumem bash bench/max-batch-54.sh [quick|full|lightning|rest|verify]
#
#   quick      grad_accum (ResNet-18, gradient accumulation) under 6 GiB, gpumem
#              and its check, no truth search: a smoke test
#   full       the 8 kinds of program under 6 and 14 GiB (lightning_vit, bert_mlm,
#              t5_train, resnet50_amp, unet, gru_lm, llama_prefill, grad_accum),
#              side_stream under both, ddp_uneven under 4 GiB (2 ranks: on one GPU
#              over gloo where only one is visible, else one GPU a rank over NCCL)
#              and fsdp_uneven under 6 GiB (1 rank); in three calls on one H200
#              (under 14 GiB only 8 runs fit at once, gpumem's 4 of them a search):
#              CAPS=6GiB TAG=6 ... full, then CAPS=14GiB TORCHRUN= PART=1/2 TAG=14a
#              ... full and CAPS=14GiB TORCHRUN= PART=2/2 TAG=14b ... full
#   rest       what the runs of 2026-11-29 left: the 8 kinds and side_stream
#              under 6 GiB, unet under 14 GiB (--max-runs 24: 16 ran out), and
#              ddp_uneven's 2 ranks on one GPU under 4 GiB (--jobs 1: its ranks
#              share the GPU), checked, the truth searched where the earlier
#              truth lacks it
#   verify     only the check: the answers in an earlier run's work (FROM=, its
#              .tgz or its folder) run again, bench/verify_answers.py
#   lightning  lightning_vit under 6 GiB: Lightning's BatchSizeFinder and gpumem
#              started together on the idle GPU, both timed; both answers checked
#              once both have ended
#
# Environment: GPUMEM_ARGS ("--jobs auto"; --json is added), GPUMEM_SLOTS (runs of
# gpumem's at once that room is kept for: 4, in lightning 12; a case's --jobs
# below it keeps less), GPUMEM_BUSY (the share of those a search is counted as
# processes for: 0.75, as it averaged 2.5 runs at once of --jobs 4 on the
# H200), GPUMEM_SHARE (the share of the room and processes all gpumem searches
# together may hold: 0.85; the checks and the truth have the rest, and an
# answer's check goes before anything else waiting), GPUMEM_CASE_ARGS (a case's
# own options, "CASE=ARGS;CASE=ARGS"), VERIFY (5), VERIFY_NEXT (2), MAX_PROCS
# (processes at once: 16, one a core; gpumem's runs seldom all run at once),
# PROGRAMS, CAPS, CASES, TORCHRUN (override a mode's cases; TORCHRUN="" none),
# PART (i/n: every n-th of the programs from the i-th, for a mode in n calls),
# TRUTH_TGZ (the earlier truth; "" none), TOTAL (seconds the whole script may
# take: 560; no gpumem search starts after TOTAL-200 (GPUMEM_DEADLINE), no truth
# run after TOTAL-110 (DEADLINE), no check after TOTAL-80 (VERIFY_DEADLINE), and
# every run still going is stopped at TOTAL-40 (HARD_LIMIT)), FROM (verify: the
# earlier work, a .tgz or a folder),
# WORK (/tmp/max-batch-54), TAG (a word added to the names in $OUT, for a mode
# run in parts: CAPS=6GiB TAG=6 ... full, then CAPS=14GiB TORCHRUN= TAG=14 ...
# full), DRY=1 (no GPU: made-up runs, bench/dryrun_cap_run.py, and
# bench/dryrun_gpumem.py as gpumem; FAKE_SLEEP seconds a run, or FAKE_SCALE:
# each run its program's seconds on the H200 times FAKE_SCALE, and all of the
# script's seconds (TOTAL, the deadlines, the timeouts) scaled alike).
# DRIVER_ARGS: more options for max_batch_truth.py, word-split ("--gpu-memory 68GiB": this
# call's share of the GPU, where another script's runs share it).
# Time arithmetic in python3 or bash integers (the device has no bc).
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
MAX_PROCS=${MAX_PROCS:-16}
GPUMEM_ARGS=${GPUMEM_ARGS:---jobs auto}
GPUMEM_BUSY=${GPUMEM_BUSY:-0.75}
GPUMEM_SHARE=${GPUMEM_SHARE:-0.85}
# The script's seconds, in the device's terms; a dry run with FAKE_SCALE scales them as its runs.
SCALE=1
[ -n "$DRY" ] && [ -n "${FAKE_SCALE:-}" ] && SCALE=$FAKE_SCALE
secs() { python3 -c 'import sys; print(round(float(sys.argv[1]) * float(sys.argv[2]), 2))' "$1" "$SCALE"; }
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
[ "$MODE" = verify ] || [ -x "$GPUMEM" ] || { echo "max-batch-54.sh: no gpumem binary at $GPUMEM (set GPUMEM)" >&2; exit 2; }
[ -x "$GPUMEM" ] && GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")

# The mode's cases and settings; PROGRAMS, CAPS, CASES and TORCHRUN override them.
MODE_ARGS=()
DEF_CASES=
DEF_CASE_ARGS=
# The 8 kinds and side_stream, the slowest runs first (their searches start first); PART=1/2 and
# 2/2 take one of grad_accum and side_stream (no earlier truth: searched here) each.
ALL_PROGRAMS="llama_prefill lightning_vit bert_mlm t5_train $HERE/batch_programs/grad_accum.py unet gru_lm side_stream resnet50_amp"
case $MODE in
    quick)
        DEF_PROGRAMS="$HERE/batch_programs/grad_accum.py"; DEF_CAPS=6GiB; DEF_TORCHRUN=
        GPUMEM_SLOTS=${GPUMEM_SLOTS:-3}
        MODE_ARGS+=(--no-truth) ;;  # short: gpumem and its check only
    full|rest)
        DEF_PROGRAMS=$ALL_PROGRAMS
        DEF_CAPS="6GiB 14GiB"
        DEF_TORCHRUN="ddp_uneven@4GiB:2 fsdp_uneven@6GiB:1"
        # unet's answer under 14 GiB took more than --max-runs 16 on 2026-11-29.
        DEF_CASE_ARGS="unet@6GiB=--max-runs 24;unet@14GiB=--max-runs 24"
        if [ "$MODE" = rest ]; then
            # 2026-11-29 answered and checked the 14 GiB half but unet (its 16 runs spent).
            DEF_CAPS=6GiB; DEF_CASES=unet@14GiB; DEF_TORCHRUN=ddp_uneven@4GiB:2
        fi
        # Two ranks on two GPUs keep issue 47's case name (and its truth); on one GPU they share it,
        # and gpumem runs one run at a time there (each run's ranks take the GPU's share of the cores).
        if [ "${NGPUS:-0}" -lt 2 ]; then
            MODE_ARGS+=(--share-gpu)
            DEF_CASE_ARGS="${DEF_CASE_ARGS:+$DEF_CASE_ARGS;}ddp_uneven@4GiB:2-1gpu=--jobs 1"
        fi
        GPUMEM_SLOTS=${GPUMEM_SLOTS:-4} ;;
    lightning)
        DEF_PROGRAMS=lightning_vit; DEF_CAPS=6GiB; DEF_TORCHRUN=
        GPUMEM_SLOTS=${GPUMEM_SLOTS:-12}
        MAX_PROCS=$((GPUMEM_SLOTS + 1))  # Lightning's one process beside gpumem's runs
        MODE_ARGS+=(--lightning --no-truth --verify-after-all) ;;
    verify)
        FROM=${FROM:?FROM: the earlier run (its .tgz or its work folder)} ;;
    *)
        echo "max-batch-54.sh: unknown mode '$MODE' (quick, full, lightning, rest or verify)" >&2; exit 2 ;;
esac
PROGRAMS=${PROGRAMS-${DEF_PROGRAMS:-}}
CAPS=${CAPS-${DEF_CAPS:-}}
CASES=${CASES-$DEF_CASES}
TORCHRUN=${TORCHRUN-${DEF_TORCHRUN:-}}
GPUMEM_CASE_ARGS=${GPUMEM_CASE_ARGS-$DEF_CASE_ARGS}
if [ -n "${PART:-}" ]; then
    # PART=i/n: the i-th of n calls takes programs i, i+n, i+2n, ... (slow and quick ones in each).
    PROGRAMS=$(python3 -c 'import sys; i, n = map(int, sys.argv[1].split("/")); print(" ".join(sys.argv[2].split()[i - 1::n]))' "$PART" "$PROGRAMS") ||
        { echo "max-batch-54.sh: PART=$PART: not i/n" >&2; exit 2; }
fi
CASE_ARGS=()
IFS=';' read -ra items <<< "$GPUMEM_CASE_ARGS"
for item in "${items[@]}"; do
    [ -n "$item" ] && CASE_ARGS+=(--gpumem-case-args "$item")
done

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

# The seconds of this call (in the device's terms, scaled for a dry run).
DEADLINE=$(secs "${DEADLINE:-$((TOTAL - 110))}")
GPUMEM_DEADLINE=$(secs "${GPUMEM_DEADLINE:-$((TOTAL - 200))}")
VERIFY_DEADLINE=$(secs "${VERIFY_DEADLINE:-$((TOTAL - 80))}")
HARD_LIMIT=$(secs "${HARD_LIMIT:-$((TOTAL - 40))}")
HARD_SECONDS=$(python3 -c 'import sys, math; print(math.ceil(float(sys.argv[1])))' "$HARD_LIMIT")

if [ "$MODE" = verify ]; then
    # Only the check of an earlier run's answers: bench/verify_answers.py on its work folder.
    mkdir -p "$WORK/from"
    if [ -d "$FROM" ]; then cp -r "$FROM" "$WORK/from/"; else tar xzf "$FROM" -C "$WORK/from" || { echo "max-batch-54.sh: cannot read $FROM" >&2; exit 2; }; fi
    FROM_WORK=$(dirname "$(find "$WORK/from" -name gpumem.jsonl | head -1)")
    [ -f "$FROM_WORK/gpumem.jsonl" ] || { echo "max-batch-54.sh: no gpumem.jsonl in $FROM" >&2; exit 2; }
    if [ -n "$DRY" ]; then ROOM_MIB=$((141 * 1024 - 3072)); VERIFY_DRY=(--dry-run)
    else ROOM_MIB=$(( $(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0) - 3072 )); VERIFY_DRY=(); fi
    python3 "$HERE/verify_answers.py" "$FROM_WORK" "$WORK/run/verify" "${VERIFY_DRY[@]}" --verify "$VERIFY" --verify-next "$VERIFY_NEXT" \
        --room "${ROOM_MIB}MiB" --procs "$MAX_PROCS" --run-timeout "$(secs 90)" --deadline "$VERIFY_DEADLINE" > "$WORK/driver.log" 2>&1 &
    DRIVER=$!
    while kill -0 $DRIVER 2>/dev/null && [ $((SECONDS - START)) -lt "$HARD_SECONDS" ]; do sleep 1; done
    kill -0 $DRIVER 2>/dev/null && { echo "max-batch-54.sh verify: hard limit, stopping its runs" >&2; pkill -TERM -P $DRIVER; kill -TERM $DRIVER; }
    wait $DRIVER
    rc=$?
    { echo "# issue 54: the answers of $FROM checked again, $(date -u '+%F %T') UTC, $((SECONDS - START)) s"
      echo; sed 's/^/    /' "$WORK/run/machine.txt"; echo; cat "$WORK/run/verify.md" 2>/dev/null; } > "$OUT/$NAME.md"
    cp "$WORK/driver.log" "$OUT/$NAME.log"
    tar czf "$OUT/$NAME.tgz" -C "$WORK" run driver.log
    echo "max-batch-54.sh verify: exit $rc after $((SECONDS - START)) s; $OUT/$NAME.{md,tgz,log}" >&2
    tail -n 1 "$OUT/$NAME.md" >&2
    exit $rc
fi

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
    --programs "$PROGRAMS" --caps "$CAPS" --cases "$CASES" --torchrun "$TORCHRUN" "${MODE_ARGS[@]}" "${TRUTH_ARGS[@]}" \
    --gpumem "$GPUMEM" --gpumem-args "$GPUMEM_ARGS" --gpumem-slots "$GPUMEM_SLOTS" "${CASE_ARGS[@]}" \
    --gpumem-busy "$GPUMEM_BUSY" --gpumem-share "$GPUMEM_SHARE" --gpumem-deadline "$GPUMEM_DEADLINE" \
    --verify "$VERIFY" --verify-next "$VERIFY_NEXT" --verify-deadline "$VERIFY_DEADLINE" --max-procs "$MAX_PROCS" \
    --search-width 3 --below 0 --run-timeout "$(secs 90)" --gpumem-timeout "$(secs $((TOTAL - 60)))" \
    --lightning-timeout "$(secs 240)" --patience "$(secs 20)" \
    --deadline "$DEADLINE" --hard-limit "$HARD_LIMIT" ${DRIVER_ARGS:-} > "$WORK/driver.log" 2>&1 &
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
