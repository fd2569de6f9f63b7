#!/usr/bin/env bash
# Issue 36 on a GPU machine: does `tune --confirm 3` end on a setting that
# really runs without an OOM, for programs that change course after one?
# For each program of bench/converge_programs/ (real PyTorch, run unmodified,
# the cap set by gpumem's hook on the default device):
#   1. calibrate: record it uncapped, then under caps from its peaks (the
#      midpoint of peak allocated and peak reserved, then 100/90/75/50 % of
#      peak allocated, largest first) until a recording where the program
#      saw an OOM and still exited 0: that cap and recording are its own;
#   2. tune that recording (capacity from the recording) and pick the
#      settings to run: the MAX_SETTINGS best, one of each predicted outcome
#      first, plus PyTorch's defaults;
#   3. `reuse-sim tune --trace F --capacity CAP --confirm 3 --json -- python3 prog.py`
#      (the JSON kept: confirm.runs[], confirm.converged);
#   4. brute force: the program run once under each of those settings
#      (PYTORCH_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF), under the cap, each
#      recorded: the OOMs it saw (the hook's program_ooms, else its own
#      'caught_ooms=N' line, else num_ooms);
# and a markdown table (torch_bench.py converge-table): program, cap,
# settings tried, which ran without an OOM, --confirm's path, converged, and
# whether the two agree.
#
#   GPUMEM=path/to/gpumem OUT=dir bash bench/converge.sh      (or: converge.sh GPUMEM OUT)
# Environment: PROGRAMS (names, default all), GPUS (indices; default
# CUDA_VISIBLE_DEVICES, else every GPU nvidia-smi lists): one program at a
# time per GPU; MAX_SETTINGS (12), RUN_TIMEOUT (75 s a run), CONFIRM_TIMEOUT
# (300 s), DEADLINE (450 s: no run starts after it), HARD_LIMIT (530 s:
# every run still going is stopped), WORK (/tmp/converge-work: recordings),
# CAPS ("name=3GiB/2GiB ..." to give a program's caps instead of step 1's).
# $OUT gets converge.md, converge.tgz (all but the recordings, refreshed as
# the runs go) and converge-pickles.tgz (the recordings, at the end).
set -u
GPUMEM=${1:-${GPUMEM:-}}
OUT=${2:-${OUT:-/tmp/converge-out}}
if [ -z "$GPUMEM" ]; then
    if [ -x "$PWD/.device/gpumem" ]; then GPUMEM=$PWD/.device/gpumem; else GPUMEM=$(command -v gpumem || true); fi
fi
[ -x "$GPUMEM" ] || { echo "converge.sh: no gpumem binary (set GPUMEM)" >&2; exit 2; }
GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")
HERE=$(cd "$(dirname "$0")" && pwd)
PROGS=$HERE/converge_programs
PY="python3 $HERE/torch_bench.py"
WORK=${WORK:-/tmp/converge-work}
PROGRAMS=${PROGRAMS:-"maskrcnn_skip resnet50_halve gpt2_generate_retry kv_preempt cache_grow_shrink checkpoint_skip lstm_cudnn lightning_oom"}
MAX_SETTINGS=${MAX_SETTINGS:-12}
RUN_TIMEOUT=${RUN_TIMEOUT:-75}
CONFIRM_TIMEOUT=${CONFIRM_TIMEOUT:-300}
DEADLINE=${DEADLINE:-450}
HARD_LIMIT=${HARD_LIMIT:-530}
CAPS=${CAPS:-}
# The runs choose their own settings: none inherited.
unset PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
if [ -z "${GPUS:-}" ]; then
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then GPUS=${CUDA_VISIBLE_DEVICES//,/ }
    else GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ' | tr '\n' ' '); fi
fi
[ -n "${GPUS// /}" ] || GPUS=0
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"
START=$SECONDS
{
    echo "converge.sh: $(date -u '+%F %T') UTC, gpumem $("$GPUMEM" --version 2>/dev/null | head -1), GPUs: $GPUS"
    nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>/dev/null
    python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1
} | tee "$WORK/machine.txt" >&2

elapsed() { echo $((SECONDS - START)); }
seconds_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f\n", b - a }'; }

# A run under a wall-time limit, stoppable: the worker's TERM trap stops
# the run going (timeout passes the signal to gpumem and its program).
CUR=
limited() {  # SECONDS OUTFILE ERRFILE CMD... -> the command's status (124: timed out)
    local limit=$1 out=$2 err=$3
    shift 3
    timeout -k 15 "$limit" "$@" < /dev/null > "$out" 2> "$err" &
    CUR=$!
    wait "$CUR"
    local rc=$?
    CUR=
    return $rc
}

# One recorded run of the program: BASE.{pickle,stats.json,out,err,exit,wall}.
record() {  # GPU PROGRAM BASE CAP SETTING ("" for PyTorch's defaults; CAP "" for none)
    local gpu=$1 prog=$2 base=$3 cap=$4 setting=$5
    local cap_args=() env_args=(CUDA_VISIBLE_DEVICES="$gpu")
    [ -n "$cap" ] && cap_args=(--capacity "$cap")
    [ -n "$setting" ] && env_args+=(PYTORCH_ALLOC_CONF="$setting" PYTORCH_CUDA_ALLOC_CONF="$setting")
    local t0=$EPOCHREALTIME
    limited "$RUN_TIMEOUT" "$base.out" "$base.err" env "${env_args[@]}" \
        "$GPUMEM" reuse-sim record -o "$base.pickle" "${cap_args[@]}" -- python3 "$PROGS/$prog.py"
    echo $? > "$base.exit"
    seconds_since "$t0" > "$base.wall"
}

converge_one() {  # GPU PROGRAM
    local gpu=$1 prog=$2 dir=$WORK/$2
    mkdir -p "$dir"
    echo "$prog" > "$dir/program.txt"
    say() { echo "[$(elapsed) s] $prog (GPU $gpu): $*" | tee -a "$dir/progress.log" >&2; }
    late() { [ "$(elapsed)" -ge "$DEADLINE" ] && { say "deadline ($DEADLINE s) passed: $1 not run"; echo "deadline passed before $1" >> "$dir/note.txt"; }; }

    # 1. The cap: from an uncapped run's peaks, or CAPS.
    local override=""
    for entry in $CAPS; do [ "${entry%%=*}" = "$prog" ] && override=${entry#*=}; done
    if [ -z "$override" ]; then
        record "$gpu" "$prog" "$dir/uncapped" "" ""
        say "uncapped: $($PY judge "$dir/uncapped") in $(cat "$dir/uncapped.wall") s (verdict exit num_ooms program_ooms caught peak_reserved)"
    fi
    local caps cap chosen="" i=0
    caps=$($PY caps "$dir/uncapped" "$override")
    [ -n "$caps" ] || { say "no peaks from the uncapped run: skipped"; echo "uncapped run gave no statistics (exit $(cat "$dir/uncapped.exit" 2>/dev/null))" > "$dir/note.txt"; return; }
    for cap in $caps; do
        late "calibration at $cap" && return
        i=$((i + 1))
        record "$gpu" "$prog" "$dir/cap$i" "$cap" ""
        local verdict
        verdict=$($PY judge "$dir/cap$i")
        say "under $cap: $verdict"
        echo "cap $cap: $verdict" >> "$dir/calibration.txt"
        case $verdict in
            oom*) chosen=$cap; break ;;
            ok*) ;;
            *) break ;;  # failed or timed out: a smaller cap will not do better
        esac
    done
    if [ -z "$chosen" ]; then
        say "no cap gave a recording with an OOM the program survived: skipped"
        echo "no cap of [${caps//$'\n'/ }] gave a recording with an OOM the program survived (see calibration.txt)" >> "$dir/note.txt"
        return
    fi
    echo "$chosen" > "$dir/cap.txt"
    for ext in pickle stats.json out err exit wall; do mv "$dir/cap$i.$ext" "$dir/recorded.$ext" 2>/dev/null; done
    rm -f "$dir"/cap[0-9]*.pickle  # the caps not chosen: their figures stay in capN.stats.json

    # 2. The grid's settings to run, from the recording's own cap.
    "$GPUMEM" reuse-sim tune --trace "$dir/recorded.pickle" --json > "$dir/tune.json" 2> "$dir/tune.err"
    $PY candidates "$dir/tune.json" "$MAX_SETTINGS" > "$dir/candidates.txt"
    say "tuned: $(wc -l < "$dir/candidates.txt") settings to run; best: $(python3 -c 'import json,sys; t=json.load(open(sys.argv[1])).get("tune") or {}; print(t.get("best_alloc_conf"), "fits" if t.get("best_fits") else "does not fit")' "$dir/tune.json" 2>&1 | tail -1)"

    # 3. --confirm 3: its own real runs, capped as the recording was.
    if ! late "--confirm"; then
        local t0=$EPOCHREALTIME
        limited "$CONFIRM_TIMEOUT" "$dir/confirm.json" "$dir/confirm.err" env CUDA_VISIBLE_DEVICES="$gpu" \
            "$GPUMEM" reuse-sim tune --trace "$dir/recorded.pickle" --capacity "$chosen" --confirm 3 --json \
            -- python3 "$PROGS/$prog.py"
        echo $? > "$dir/confirm.exit"
        seconds_since "$t0" > "$dir/confirm.wall"
        say "--confirm 3: exit $(cat "$dir/confirm.exit") in $(cat "$dir/confirm.wall") s: $(grep -- '--confirm' "$dir/confirm.err" | tail -1)"
    fi

    # 4. Brute force: each setting once, under the cap.
    local n=0 setting
    while IFS= read -r setting; do
        n=$((n + 1))
        [ "$setting" = "(defaults)" ] && setting=""
        printf '%s\n' "$setting" > "$dir/bf$n.setting"
        late "brute-force run $n" && break
        record "$gpu" "$prog" "$dir/bf$n" "$chosen" "$setting"
        say "brute force $n (${setting:-defaults}): $($PY judge "$dir/bf$n")"
        rm -f "$dir/bf$n.pickle"  # its figures are in bf$n.stats.json; the snapshots would only fill the disk
    done < "$dir/candidates.txt"
    say "done"
}

worker() {  # GPU: takes programs off the list until none is left
    trap '[ -n "$CUR" ] && kill -TERM "$CUR" 2>/dev/null; exit 143' TERM
    local gpu=$1 prog
    for prog in $PROGRAMS; do
        mkdir "$WORK/.claim.$prog" 2>/dev/null || continue
        [ "$(elapsed)" -ge "$DEADLINE" ] && { mkdir -p "$WORK/$prog"; echo "$prog" > "$WORK/$prog/program.txt"; echo "not started: deadline" > "$WORK/$prog/note.txt"; continue; }
        converge_one "$gpu" "$prog"
        touch "$WORK/$prog/done"
    done
}

snapshot() {  # everything but the recordings, into $OUT
    tar czf "$OUT/converge.tgz.part" -C "$(dirname "$WORK")" --exclude='*.pickle' "$(basename "$WORK")" 2>/dev/null
    mv -f "$OUT/converge.tgz.part" "$OUT/converge.tgz"
}

pids=()
for gpu in $GPUS; do
    worker "$gpu" &
    pids+=($!)
done
last_tar=$SECONDS
while :; do
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 1 ] || break
    if [ "$(elapsed)" -ge "$HARD_LIMIT" ]; then
        echo "[$(elapsed) s] hard limit ($HARD_LIMIT s): stopping the runs still going" >&2
        for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
        for dir in "$WORK"/*/; do
            [ -f "$dir/program.txt" ] && [ ! -f "$dir/done" ] && echo "stopped at the hard limit ($HARD_LIMIT s)" >> "$dir/note.txt"
        done
        for _ in $(seq 20); do  # the runs stopped, give gpumem a moment to write what it measured
            alive=0
            for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
            [ $alive = 1 ] || break
            sleep 1
        done
        break
    fi
    if [ $((SECONDS - last_tar)) -ge 30 ]; then snapshot; last_tar=$SECONDS; fi
    sleep 5
done
wait 2>/dev/null
for prog in $PROGRAMS; do  # the programs no worker reached still get a row
    [ -d "$WORK/$prog" ] && continue
    mkdir -p "$WORK/$prog"
    echo "$prog" > "$WORK/$prog/program.txt"
    echo "not started: the hard limit ($HARD_LIMIT s) came first" > "$WORK/$prog/note.txt"
done

{
    echo "# tune --confirm 3 against brute force on programs that change course after an OOM (issue 36)"
    echo
    sed 's/^/- /' "$WORK/machine.txt"
    echo "- settings run by brute force: the $MAX_SETTINGS best of tune's grid (one of each predicted outcome first) and PyTorch's defaults; 'ran without an OOM': exit 0 and no OOM the program saw; $(elapsed) s in all"
    echo
    $PY converge-table "$WORK"
} > "$WORK/converge.md" 2> "$WORK/table.err"
cp "$WORK/converge.md" "$OUT/converge.md"
snapshot
(cd "$(dirname "$WORK")" && find "$(basename "$WORK")" -name '*.pickle' -print0 | tar czf "$OUT/converge-pickles.tgz" --null -T -)
cat "$OUT/converge.md"
