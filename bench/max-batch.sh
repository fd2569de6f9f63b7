#!/usr/bin/env bash
# Issue 37 on a GPU machine: gpumem's "largest batch that fits" against the
# truth. For each program of bench/batch_programs/ (real PyTorch, taking
# --bs N and --steps), under a cap well below the GPU (set by gpumem's hook):
#   1. the end-to-end form, timed:
#        gpumem reuse-sim max-batch --capacity CAP --full-grid --json -- python3 prog.py --bs {batch} --steps S
#      and the same with --confirm (MB_CONFIRM, default "--confirm"; a
#      bare --confirm is tried when that is refused as usage, exit 2;
#      MB_CONFIRM=none: not run);
#   2. the fallback that needs no end-to-end form: two recordings at
#      FALLBACK_BATCHES (default 4 and 8) with reuse-sim record under the cap, then
#        gpumem reuse-sim max-batch --batch-trace 4=a.pickle --batch-trace 8=b.pickle --capacity CAP --json
#   3. the truth: real runs under the cap, each `gpumem reuse-sim record -o X
#      --capacity CAP -- python3 prog.py --bs B` (an OOM: exit status not 0,
#      or num_ooms > 0 in X.stats.json), the batch doubled from START_BS until
#      one runs out of memory (or LIMIT_BS), then bisected to STEP, the real
#      runs and their wall time counted;
# and a markdown table (torch_bench.py max-batch-table): program, cap,
# gpumem's answers, the true largest batch, exact / one step off /
# wrong-high, and time and runs of each. The raw JSON documents are kept.
#
#   GPUMEM=path/to/gpumem OUT=dir bash bench/max-batch.sh      (or: max-batch.sh GPUMEM OUT)
# Environment: PROGRAMS (names, default all), CAPS ("name=8GiB ...", each
# program's cap; defaults below), GPUS (indices; default
# CUDA_VISIBLE_DEVICES, else every GPU nvidia-smi lists): one program at a
# time per GPU; STEPS (3), START_BS (8), LIMIT_BS (4096), STEP (1),
# RUN_TIMEOUT (90 s a real run), E2E_TIMEOUT (300 s a gpumem reuse-sim max-batch),
# TRUTH_FROM (an earlier run's WORK: its search's runs stand for the truth,
# none run again), DEADLINE (450 s: no run starts after it), HARD_LIMIT (530 s: every run
# still going is stopped), WORK (/tmp/max-batch-work).
# $OUT gets max-batch.md and max-batch.tgz (refreshed as the runs go; the
# recordings of the search are not kept, only their statistics).
set -u
GPUMEM=${1:-${GPUMEM:-}}
OUT=${2:-${OUT:-/tmp/max-batch-out}}
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=max-batch
source "$HERE/gpu_pool.sh"
pool_find_gpumem
PROGS=$HERE/batch_programs
PY="python3 $HERE/torch_bench.py"
WORK=${WORK:-/tmp/max-batch-work}
PROGRAMS=${PROGRAMS:-"mlp transformer_encoder cnn_bn gpt2_train timm_model lstm detection_eval grad_accum"}
DEFAULT_CAPS="mlp=6GiB transformer_encoder=8GiB cnn_bn=6GiB gpt2_train=8GiB timm_model=8GiB lstm=6GiB detection_eval=6GiB grad_accum=6GiB"
CAPS="${CAPS:-} $DEFAULT_CAPS"  # the first entry for a program wins: CAPS overrides the defaults
STEPS=${STEPS:-3}
START_BS=${START_BS:-8}
LIMIT_BS=${LIMIT_BS:-4096}
STEP=${STEP:-1}
FALLBACK_BATCHES=${FALLBACK_BATCHES-"4 8"}  # empty: no fallback
MB_CONFIRM=${MB_CONFIRM:-"--confirm"}
RUN_TIMEOUT=${RUN_TIMEOUT:-90}
E2E_TIMEOUT=${E2E_TIMEOUT:-300}
DEADLINE=${DEADLINE:-450}
HARD_LIMIT=${HARD_LIMIT:-530}
pool_start

# gpumem under a limit: BASE.{json,err,exit,wall}.
gpumem_timed() {  # GPU BASE ARGS...
    local gpu=$1 base=$2
    shift 2
    local t0=$EPOCHREALTIME
    limited "$E2E_TIMEOUT" "$base.json" "$base.err" env CUDA_VISIBLE_DEVICES="$gpu" "$GPUMEM" "$@"
    echo $? > "$base.exit"
    seconds_since "$t0" > "$base.wall"
}

# One real run at batch B, recorded: BASE.{stats.json,out,err,exit,wall}.
record_at() {  # GPU PROGRAM BASE CAP BATCH
    local gpu=$1 prog=$2 base=$3 cap=$4 batch=$5
    local t0=$EPOCHREALTIME
    limited "$RUN_TIMEOUT" "$base.out" "$base.err" env CUDA_VISIBLE_DEVICES="$gpu" \
        "$GPUMEM" reuse-sim record -o "$base.pickle" --capacity "$cap" -- python3 "$PROGS/$prog.py" --bs "$batch" --steps "$STEPS"
    echo $? > "$base.exit"
    seconds_since "$t0" > "$base.wall"
}

# Issue 37's rule: fits when the run exited 0 and torch counted no OOM.
trial_verdict() {  # BASE -> fits | oom | timeout
    local verdict rc num_ooms rest
    read -r verdict rc num_ooms rest < <($PY judge "$1")
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo timeout
    elif [ "$rc" = 0 ] && [ "$num_ooms" = 0 ]; then echo fits
    else echo oom; fi
}

max_batch_one() {  # GPU PROGRAM
    local gpu=$1 prog=$2 dir=$WORK/$2 cap="" entry
    mkdir -p "$dir"
    echo "$prog" > "$dir/program.txt"
    say() { echo "[$(elapsed) s] $prog (GPU $gpu): $*" | tee -a "$dir/progress.log" >&2; }
    late() { [ "$(elapsed)" -ge "$DEADLINE" ] && { say "deadline ($DEADLINE s) passed: $1 not run"; echo "deadline passed before $1" >> "$dir/note.txt"; }; }
    for entry in $CAPS; do [ "${entry%%=*}" = "$prog" ] && [ -z "$cap" ] && cap=${entry#*=}; done
    [ -n "$cap" ] || cap=8GiB
    echo "$cap" > "$dir/cap.txt"
    local cmd=(python3 "$PROGS/$prog.py" --bs "{batch}" --steps "$STEPS")

    # 1. The end-to-end form, then with --confirm.
    if ! late "the end-to-end form"; then
        gpumem_timed "$gpu" "$dir/e2e" reuse-sim max-batch --capacity "$cap" --full-grid --json -- "${cmd[@]}"
        say "end to end: exit $(cat "$dir/e2e.exit") in $(cat "$dir/e2e.wall") s: $($PY max-batch-answer "$dir/e2e.json")"
    fi
    if [ "$MB_CONFIRM" != none ] && ! late "the end-to-end form with --confirm"; then
        # shellcheck disable=SC2086  # MB_CONFIRM is split into words on purpose
        gpumem_timed "$gpu" "$dir/e2e_confirm" reuse-sim max-batch --capacity "$cap" --full-grid $MB_CONFIRM --json -- "${cmd[@]}"
        if [ "$(cat "$dir/e2e_confirm.exit")" = 2 ] && [ "$MB_CONFIRM" != "--confirm" ]; then
            say "'$MB_CONFIRM' refused ($(head -1 "$dir/e2e_confirm.err")): trying a bare --confirm"
            mv "$dir/e2e_confirm.err" "$dir/e2e_confirm.first.err"
            gpumem_timed "$gpu" "$dir/e2e_confirm" reuse-sim max-batch --capacity "$cap" --full-grid --confirm --json -- "${cmd[@]}"
        fi
        say "end to end, --confirm: exit $(cat "$dir/e2e_confirm.exit") in $(cat "$dir/e2e_confirm.wall") s: $($PY max-batch-answer "$dir/e2e_confirm.json")"
    fi

    # 2. The fallback: two recordings made here, then --batch-trace.
    local b traces=() t0=$EPOCHREALTIME
    for b in $FALLBACK_BATCHES; do
        late "the fallback's recording at $b" && break
        record_at "$gpu" "$prog" "$dir/fallback-bs$b" "$cap" "$b"
        say "fallback recording at batch $b: $(trial_verdict "$dir/fallback-bs$b")"
        traces+=(--batch-trace "$b=$dir/fallback-bs$b.pickle")
    done
    if [ ${#traces[@]} -ge 4 ]; then
        gpumem_timed "$gpu" "$dir/fallback" reuse-sim max-batch "${traces[@]}" --capacity "$cap" --json
        seconds_since "$t0" > "$dir/fallback.wall"  # the two recordings included
        say "fallback: exit $(cat "$dir/fallback.exit"): $($PY max-batch-answer "$dir/fallback.json")"
    fi

    # 3. The truth: doubling, then bisection, on real runs; or, with
    # TRUTH_FROM (an earlier run's WORK on the same kind of GPU), its runs.
    local lo=0 hi=0 verdict
    b=$START_BS
    if [ -n "${TRUTH_FROM:-}" ]; then
        cp "$TRUTH_FROM/$prog"/trial-*.stats.json "$TRUTH_FROM/$prog"/trial-*.exit "$TRUTH_FROM/$prog"/trial-*.wall "$dir/" 2>/dev/null
        echo "the search's real runs are those of an earlier run ($TRUTH_FROM), same GPU kind, same cap" >> "$dir/note.txt"
        b=0
    fi
    while [ "$b" -gt 0 ]; do
        late "the search's run at batch $b" && break
        record_at "$gpu" "$prog" "$dir/trial-$b" "$cap" "$b"
        rm -f "$dir/trial-$b.pickle"  # its figures are in trial-$b.stats.json
        verdict=$(trial_verdict "$dir/trial-$b")
        say "search: batch $b: $verdict in $(cat "$dir/trial-$b.wall") s"
        [ "$verdict" = timeout ] && { echo "the run at batch $b timed out" >> "$dir/note.txt"; break; }
        if [ "$verdict" = fits ]; then lo=$b; else hi=$b; fi
        if [ "$hi" -eq 0 ]; then
            [ "$b" -ge "$LIMIT_BS" ] && break
            b=$((b * 2))
            [ "$b" -gt "$LIMIT_BS" ] && b=$LIMIT_BS
        else
            [ $((hi - lo)) -le "$STEP" ] && break
            b=$(((lo + (hi - lo) / 2) / STEP * STEP))
            [ "$b" -le "$lo" ] && b=$((lo + STEP))
        fi
    done
    $PY search-result "$dir" "$STEP" "$LIMIT_BS" > "$dir/search.json"
    say "true largest batch: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["largest"], "after", d["runs"], "runs,", round(d["wall"], 1), "s")' "$dir/search.json")"
}

pool_run max_batch_one
# A program stopped mid-search still gets its search.json from the runs it made.
for dir in "$WORK"/*/; do
    [ -f "$dir/program.txt" ] && [ ! -f "$dir/search.json" ] && $PY search-result "$dir" "$STEP" "$LIMIT_BS" > "$dir/search.json"
done

{
    echo "# Largest batch that fits: gpumem reuse-sim max-batch against a real doubling-and-bisection search (issue 37)"
    echo
    sed 's/^/- /' "$WORK/machine.txt"
    echo "- $STEPS steps a run; search from batch $START_BS, doubling up to $LIMIT_BS, bisection to $STEP; an OOM: exit status not 0 or num_ooms > 0; 'gpumem vs truth' judges the end-to-end answer (else the fallback's) under PyTorch's defaults; $(elapsed) s in all"
    echo
    $PY max-batch-table "$WORK"
} > "$WORK/max-batch.md" 2> "$WORK/table.err"
cp "$WORK/max-batch.md" "$OUT/max-batch.md"
pool_snapshot
cat "$OUT/max-batch.md"
