# Sourced by bench/converge.sh and bench/max-batch.sh: their programs spread
# over the GPUs, one worker a GPU taking programs off the list, under a
# DEADLINE (no program starts after it) and a HARD_LIMIT (the runs still
# going are stopped), with what was measured tarred into $OUT every 30 s, so
# that a device call that runs out of time still brings something back.
#
# The script sets NAME (its name, for messages and the archive), OUT, WORK,
# PROGRAMS, DEADLINE and HARD_LIMIT, may set GPUMEM and GPUS, then calls:
#   pool_find_gpumem          GPUMEM: given, else .device/gpumem, else PATH's
#   pool_start                GPUS, a fresh WORK, START, WORK/machine.txt
#   pool_run ONE              ONE GPU PROGRAM for each program, on the
#                             workers; every program gets a row after it
#   pool_snapshot             WORK (not its *.pickle) into OUT/NAME.tgz
# and uses elapsed, seconds_since and limited in its runs.

pool_find_gpumem() {
    if [ -z "$GPUMEM" ]; then
        if [ -x "$PWD/.device/gpumem" ]; then GPUMEM=$PWD/.device/gpumem; else GPUMEM=$(command -v gpumem || true); fi
    fi
    [ -x "$GPUMEM" ] || { echo "$NAME.sh: no gpumem binary (set GPUMEM)" >&2; exit 2; }
    GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")
}

pool_start() {
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
        echo "$NAME.sh: $(date -u '+%F %T') UTC, gpumem $("$GPUMEM" --version 2>/dev/null | head -1), GPUs: $GPUS"
        nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader 2>/dev/null
        python3 -c 'import torch; print("torch", torch.__version__)' 2>&1 | tail -1
    } | tee "$WORK/machine.txt" >&2
}

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

pool_snapshot() {
    tar czf "$OUT/$NAME.tgz.part" -C "$(dirname "$WORK")" --exclude='*.pickle' "$(basename "$WORK")" 2>/dev/null
    mv -f "$OUT/$NAME.tgz.part" "$OUT/$NAME.tgz"
}

pool_worker() {  # ONE GPU: takes programs off the list until none is left
    trap '[ -n "$CUR" ] && kill -TERM "$CUR" 2>/dev/null; exit 143' TERM
    local one=$1 gpu=$2 prog
    for prog in $PROGRAMS; do
        mkdir "$WORK/.claim.$prog" 2>/dev/null || continue
        [ "$(elapsed)" -ge "$DEADLINE" ] && { mkdir -p "$WORK/$prog"; echo "$prog" > "$WORK/$prog/program.txt"; echo "not started: deadline" > "$WORK/$prog/note.txt"; continue; }
        "$one" "$gpu" "$prog"
        touch "$WORK/$prog/done"
    done
}

pool_run() {  # ONE
    local one=$1 gpu pid alive
    local pids=()
    for gpu in $GPUS; do
        pool_worker "$one" "$gpu" &
        pids+=($!)
    done
    local last_tar=$SECONDS
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
        if [ $((SECONDS - last_tar)) -ge 30 ]; then pool_snapshot; last_tar=$SECONDS; fi
        sleep 5
    done
    wait 2>/dev/null
    for prog in $PROGRAMS; do  # the programs no worker reached still get a row
        [ -d "$WORK/$prog" ] && continue
        mkdir -p "$WORK/$prog"
        echo "$prog" > "$WORK/$prog/program.txt"
        echo "not started: the hard limit ($HARD_LIMIT s) came first" > "$WORK/$prog/note.txt"
    done
}
