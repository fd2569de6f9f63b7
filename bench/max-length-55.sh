#!/usr/bin/env bash
# Issue 55 on a GPU host (one H200 is enough): gpumem's "longest length (any
# knob) that fits" checked the way its done-when asks. For each case (a
# program's words with its knob in braces, under a cap), bench/max_batch_truth.py
# --knob-cases runs, all at once where the GPU's memory and the host's cores allow:
#   gpumem reuse-sim max-batch --capacity CAP [--multiple-of N] $GPUMEM_ARGS --json -- python3 prog.py --seq {seq} ... --steps 3
# (timed; room kept for GPUMEM_SLOTS of its runs at once), then its answer
# VERIFY more times and the next value (answer + N) VERIFY_NEXT times under
# PyTorch's own cap (bench/cap_run.py), and the truth: doubling from the
# case's start and bisection on multiples of N, 3 runs at once.
#
#   OUT=$OUT GPUMEM=.device/gpumem bash bench/max-length-55.sh [probe|quick|full|verify]
#
# The cases (bench/length_programs/cases-55.json; the programs' docstrings say
# their memory on paper) and what each shows:
#   gpt_len_eager   GPT-2 small, bs 2, eager attention: the batch x heads x L x L
#                   scores, softmax and dropout kept for the backward, memory
#                   quadratic in L: gpumem's quadratic model, searched to the token
#                   (multiple 1) under 6 and 14 GiB
#   gpt_len_sdpa    the same model with SDPA (flash): linear in L, multiples of 64;
#                   beside eager, what the attention's kind does to the longest L
#   llama_len       a Llama-shaped decoder fine-tuned in bf16 at bs 4, SDPA: the
#                   question users ask ("the longest context at batch 4"), multiples
#                   of 128
#   vit_img         timm's ViT-S/16 at bs 32 by image side S: (S/16)^2 tokens, memory
#                   quadratic in the knob, multiples of 16 (the patch)
#   bert_mlm@6GiB   issue 54's batch search (--bs {batch}), carried over unchanged:
#                   the batch's path still answers as before (its truth from
#                   TRUTH_TGZ, issue 54's)
#
#   probe   each program once at three values of its knob, all at once, under a
#           cap none reaches (bench/length_probe.py): the peaks, the seconds, and
#           the answers they foretell under 6 and 14 GiB; a check of the memory on
#           paper before the searches (about 60 s)
#   quick   gpt_len_sdpa under 6 GiB: gpumem and its check, no truth: a smoke test
#   full    the 9 cases (4 programs x 6 and 14 GiB, and bert_mlm@6GiB) in PART=i/n
#           calls: PART=1/2 gpt_len_eager@14GiB gpt_len_eager@6GiB llama_len@14GiB
#           gpt_len_sdpa@6GiB bert_mlm@6GiB, PART=2/2 gpt_len_sdpa@14GiB
#           llama_len@6GiB vit_img@14GiB vit_img@6GiB (two 14 GiB cases each: 8
#           runs of 14 GiB fit at once on an H200, gpumem's 4 of them a search)
#   verify  only the check: the answers in an earlier run's work (FROM=, its .tgz
#           or its folder) run again, bench/verify_answers.py
#
# Environment as bench/max-batch-54.sh's: GPUMEM_ARGS ("--jobs auto"; --json is
# added, and --multiple-of N for a case whose step N > 1), GPUMEM_SLOTS (4),
# GPUMEM_BUSY (0.75), GPUMEM_SHARE (0.85), GPUMEM_CASE_ARGS ("CASE=ARGS;CASE=ARGS",
# over cases-55.json's own), VERIFY (5), VERIFY_NEXT (2), MAX_PROCS (16), CASES
# (NAME@CAP ..., in the order PART takes every n-th of), PART (i/n), KNOB_CASES
# (the cases' JSON file), TRUTH_TGZ (issue 54's truth for bert_mlm; "" none),
# TOTAL (560 s: no gpumem search starts after TOTAL-200, no truth run after
# TOTAL-110, no check after TOTAL-80, every run still going stopped at
# TOTAL-40), FROM (verify), WORK (/tmp/max-length-55), TAG (a word added to the
# names in $OUT), DRY=1 (no GPU: bench/dryrun_cap_run.py's made-up runs, by
# each program's memory on paper, and bench/dryrun_gpumem.py as gpumem;
# FAKE_SLEEP, or FAKE_SCALE: each run its program's seconds times FAKE_SCALE,
# and the script's seconds scaled alike).
# $OUT gets NAME.md (the tables), NAME.tgz (the work folder) and NAME.log (the
# driver's progress), NAME being max-length-55-MODE[-TAG] (PART i/n adds -pI),
# refreshed every 30 s while it runs.
set -u
MODE=${1:-quick}
HERE=$(cd "$(dirname "$0")" && pwd)
PART_TAG=
[ -n "${PART:-}" ] && PART_TAG=-p${PART%%/*}
NAME=max-length-55-$MODE$PART_TAG${TAG:+-$TAG}
OUT=${OUT:?OUT: the folder for the results}
WORK=${WORK:-/tmp/max-length-55}
DRY=${DRY:-}
TOTAL=${TOTAL:-560}
VERIFY=${VERIFY:-5}
VERIFY_NEXT=${VERIFY_NEXT:-2}
MAX_PROCS=${MAX_PROCS:-16}
GPUMEM_ARGS=${GPUMEM_ARGS:---jobs auto}
GPUMEM_SLOTS=${GPUMEM_SLOTS:-4}
GPUMEM_BUSY=${GPUMEM_BUSY:-0.75}
GPUMEM_SHARE=${GPUMEM_SHARE:-0.85}
KNOB_CASES=${KNOB_CASES:-$HERE/length_programs/cases-55.json}
SCALE=1
[ -n "$DRY" ] && [ -n "${FAKE_SCALE:-}" ] && SCALE=$FAKE_SCALE
secs() { python3 -c 'import sys; print(round(float(sys.argv[1]) * float(sys.argv[2]), 2))' "$1" "$SCALE"; }
# bert_mlm's truth from issue 54's runs; a dry run searches it with its made-up runs instead.
if [ -n "$DRY" ]; then TRUTH_TGZ=${TRUTH_TGZ-}; else TRUTH_TGZ=${TRUTH_TGZ-$HERE/results/2026-11-28-max-batch-w/run2-max-batch.tgz}; fi
if [ -n "$DRY" ]; then
    GPUMEM=${GPUMEM:-$HERE/dryrun_gpumem.py}
    DRIVER_DRY=(--dry-run --gpus 0)
else
    GPUMEM=${GPUMEM:-.device/gpumem}
    DRIVER_DRY=()
fi
case $MODE in
    probe|verify) ;;
    quick|full) [ -x "$GPUMEM" ] || { echo "max-length-55.sh: no gpumem binary at $GPUMEM (set GPUMEM)" >&2; exit 2; } ;;
    *) echo "max-length-55.sh: unknown mode '$MODE' (probe, quick, full or verify)" >&2; exit 2 ;;
esac
[ -x "$GPUMEM" ] && GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")

MODE_ARGS=()
case $MODE in
    quick) DEF_CASES=gpt_len_sdpa@6GiB; MODE_ARGS+=(--no-truth) ;;
    # Every n-th from the i-th (PART=i/n): this order gives each half two of the 14 GiB cases.
    *) DEF_CASES="gpt_len_eager@14GiB gpt_len_sdpa@14GiB gpt_len_eager@6GiB llama_len@6GiB llama_len@14GiB vit_img@14GiB gpt_len_sdpa@6GiB vit_img@6GiB bert_mlm@6GiB" ;;
esac
CASES=${CASES-$DEF_CASES}
if [ -n "${PART:-}" ]; then
    CASES=$(python3 -c 'import sys; i, n = map(int, sys.argv[1].split("/")); print(" ".join(sys.argv[2].split()[i - 1::n]))' "$PART" "$CASES") ||
        { echo "max-length-55.sh: PART=$PART: not i/n" >&2; exit 2; }
fi
# The batch cases (bert_mlm@6GiB: a program of batch_programs_w) go by --cases, the others by --knob-select.
KNOB_NAMES=$(python3 -c 'import json, sys; print(" ".join(sorted(set(c["name"] for c in json.load(open(sys.argv[1]))))))' "$KNOB_CASES") || exit 2
BATCH_CASES=
KNOB_SELECT=
for c in $CASES; do
    if [[ " $KNOB_NAMES " == *" ${c%@*} "* ]]; then KNOB_SELECT+="${KNOB_SELECT:+ }$c"; else BATCH_CASES+="${BATCH_CASES:+ }$c"; fi
done
CASE_ARGS=()
IFS=';' read -ra items <<< "${GPUMEM_CASE_ARGS:-}"
for item in "${items[@]}"; do
    [ -n "$item" ] && CASE_ARGS+=(--gpumem-case-args "$item")
done

unset PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF  # the runs choose their own settings
rm -rf "$WORK"
mkdir -p "$WORK/run" "$OUT"
START=$SECONDS
{
    echo "max-length-55.sh $MODE${PART:+ PART=$PART}: $(date -u '+%F %T') UTC, gpumem $("$GPUMEM" --version 2>/dev/null | head -1), $(nproc) cores"
    echo "cases: $CASES"
    nvidia-smi --query-gpu=index,name,memory.total,memory.used --format=csv,noheader 2>/dev/null
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
    python3 -c 'import transformers; print("transformers", transformers.__version__)' 2>&1 | tail -1
    python3 -c 'import timm; print("timm", timm.__version__)' 2>&1 | tail -1
} > "$WORK/run/machine.txt" 2>&1
cat "$WORK/run/machine.txt" >&2

DEADLINE=$(secs "${DEADLINE:-$((TOTAL - 110))}")
GPUMEM_DEADLINE=$(secs "${GPUMEM_DEADLINE:-$((TOTAL - 200))}")
VERIFY_DEADLINE=$(secs "${VERIFY_DEADLINE:-$((TOTAL - 80))}")
HARD_LIMIT=$(secs "${HARD_LIMIT:-$((TOTAL - 40))}")
HARD_SECONDS=$(python3 -c 'import sys, math; print(math.ceil(float(sys.argv[1])))' "$HARD_LIMIT")
DRY_FLAG=()
[ -n "$DRY" ] && DRY_FLAG=(--dry-run)

if [ "$MODE" = probe ]; then
    timeout "$HARD_SECONDS" python3 "$HERE/length_probe.py" --cases "$KNOB_CASES" --work "$WORK/run" "${DRY_FLAG[@]}" \
        --timeout "$(secs 120)" > "$WORK/driver.log" 2>&1
    rc=$?
    { echo "# issue 55: probe, $(date -u '+%F %T') UTC, $((SECONDS - START)) s"
      echo; sed 's/^/    /' "$WORK/run/machine.txt"; echo; cat "$WORK/run/probe.md" 2>/dev/null; } > "$OUT/$NAME.md"
    cp "$WORK/driver.log" "$OUT/$NAME.log"
    tar czf "$OUT/$NAME.tgz" -C "$WORK" run driver.log
    echo "max-length-55.sh probe: exit $rc after $((SECONDS - START)) s; $OUT/$NAME.{md,tgz,log}" >&2
    exit $rc
fi

if [ "$MODE" = verify ]; then
    FROM=${FROM:?FROM: the earlier run (its .tgz or its work folder)}
    mkdir -p "$WORK/from"
    if [ -d "$FROM" ]; then cp -r "$FROM" "$WORK/from/"; else tar xzf "$FROM" -C "$WORK/from" || { echo "max-length-55.sh: cannot read $FROM" >&2; exit 2; }; fi
    FROM_WORK=$(dirname "$(find "$WORK/from" -name gpumem.jsonl | head -1)")
    [ -f "$FROM_WORK/gpumem.jsonl" ] || { echo "max-length-55.sh: no gpumem.jsonl in $FROM" >&2; exit 2; }
    if [ -n "$DRY" ]; then ROOM_MIB=$((141 * 1024 - 3072))
    else ROOM_MIB=$(( $(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0) - 3072 )); fi
    timeout "$HARD_SECONDS" python3 "$HERE/verify_answers.py" "$FROM_WORK" "$WORK/run/verify" "${DRY_FLAG[@]}" --verify "$VERIFY" \
        --verify-next "$VERIFY_NEXT" --room "${ROOM_MIB}MiB" --procs "$MAX_PROCS" --run-timeout "$(secs 90)" \
        --deadline "$VERIFY_DEADLINE" > "$WORK/driver.log" 2>&1
    rc=$?
    { echo "# issue 55: the answers of $FROM checked again, $(date -u '+%F %T') UTC, $((SECONDS - START)) s"
      echo; sed 's/^/    /' "$WORK/run/machine.txt"; echo; cat "$WORK/run/verify.md" 2>/dev/null; } > "$OUT/$NAME.md"
    cp "$WORK/driver.log" "$OUT/$NAME.log"
    tar czf "$OUT/$NAME.tgz" -C "$WORK" run driver.log
    echo "max-length-55.sh verify: exit $rc after $((SECONDS - START)) s; $OUT/$NAME.{md,tgz,log}" >&2
    exit $rc
fi

TRUTH_ARGS=()
if [ -n "$TRUTH_TGZ" ] && [ -n "$BATCH_CASES" ]; then
    mkdir -p "$WORK/truth-from"
    tar xzf "$TRUTH_TGZ" -C "$WORK/truth-from" || { echo "max-length-55.sh: cannot read $TRUTH_TGZ" >&2; exit 2; }
    for cases in "$WORK"/truth-from/*/cases.jsonl; do
        [ -f "$cases" ] && TRUTH_ARGS+=(--truth-from "$(dirname "$cases")")
    done
fi

snapshot() {
    local table="python3 $HERE/max_batch_table.py"
    {
        echo "# issue 55: $MODE${PART:+ PART=$PART}, $(date -u '+%F %T') UTC, $((SECONDS - START)) s in"
        echo; sed 's/^/    /' "$WORK/run/machine.txt"
        echo; echo "## gpumem's answers checked under PyTorch's own cap"; echo
        $table verify "$WORK/run"
        echo; echo "## gpumem against the truth"; echo
        $table compare "$WORK/run"
        echo; echo "## The truth (this run's${TRUTH_ARGS:+; bert_mlm's from issue 54's})"; echo
        $table truth "$WORK/run"
    } > "$OUT/$NAME.md.part" 2>&1 && mv "$OUT/$NAME.md.part" "$OUT/$NAME.md"
    cp "$WORK/driver.log" "$OUT/$NAME.log.part" 2>/dev/null && mv "$OUT/$NAME.log.part" "$OUT/$NAME.log"
    tar czf "$OUT/$NAME.tgz.part" -C "$WORK" --exclude='*.pickle' run driver.log 2>/dev/null && mv "$OUT/$NAME.tgz.part" "$OUT/$NAME.tgz"
}

python3 "$HERE/max_batch_truth.py" --work "$WORK/run" "${DRIVER_DRY[@]}" \
    --programs "" --cases "$BATCH_CASES" --knob-cases "$KNOB_CASES" --knob-select "${KNOB_SELECT:-none@none}" \
    "${MODE_ARGS[@]}" "${TRUTH_ARGS[@]}" \
    --gpumem "$GPUMEM" --gpumem-args "$GPUMEM_ARGS" --gpumem-slots "$GPUMEM_SLOTS" "${CASE_ARGS[@]}" \
    --gpumem-busy "$GPUMEM_BUSY" --gpumem-share "$GPUMEM_SHARE" --gpumem-deadline "$GPUMEM_DEADLINE" \
    --verify "$VERIFY" --verify-next "$VERIFY_NEXT" --verify-deadline "$VERIFY_DEADLINE" --max-procs "$MAX_PROCS" \
    --search-width 3 --below 0 --run-timeout "$(secs 90)" --gpumem-timeout "$(secs $((TOTAL - 60)))" --patience "$(secs 20)" \
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
echo "max-length-55.sh $MODE: driver exit $rc after $((SECONDS - START)) s; $OUT/$NAME.{md,tgz,log}" >&2
tail -n 3 "$WORK/driver.log" >&2
grep -A2 '^[0-9]* answers of' "$OUT/$NAME.md" >&2
exit $rc
