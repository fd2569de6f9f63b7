#!/usr/bin/env bash
# Issue 36 on a GPU machine: does `tune --confirm --max-runs 3` end on a setting that
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
#   3. `reuse-sim tune --trace F --capacity CAP --confirm --max-runs 3 --json -- python3 prog.py`
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
HERE=$(cd "$(dirname "$0")" && pwd)
NAME=converge
source "$HERE/gpu_pool.sh"
pool_find_gpumem
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
pool_start

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

    # 3. --confirm --max-runs 3: its own real runs, capped as the recording was.
    if ! late "--confirm"; then
        local t0=$EPOCHREALTIME
        limited "$CONFIRM_TIMEOUT" "$dir/confirm.json" "$dir/confirm.err" env CUDA_VISIBLE_DEVICES="$gpu" \
            "$GPUMEM" reuse-sim tune --trace "$dir/recorded.pickle" --capacity "$chosen" --confirm --max-runs 3 --json \
            -- python3 "$PROGS/$prog.py"
        echo $? > "$dir/confirm.exit"
        seconds_since "$t0" > "$dir/confirm.wall"
        say "--confirm --max-runs 3: exit $(cat "$dir/confirm.exit") in $(cat "$dir/confirm.wall") s: $(grep -- '--confirm' "$dir/confirm.err" | tail -1)"
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

pool_run converge_one

{
    echo "# tune --confirm --max-runs 3 against brute force on programs that change course after an OOM (issue 36)"
    echo
    sed 's/^/- /' "$WORK/machine.txt"
    echo "- settings run by brute force: the $MAX_SETTINGS best of tune's grid (one of each predicted outcome first) and PyTorch's defaults; 'ran without an OOM': exit 0 and no OOM the program saw; $(elapsed) s in all"
    echo
    $PY converge-table "$WORK"
} > "$WORK/converge.md" 2> "$WORK/table.err"
cp "$WORK/converge.md" "$OUT/converge.md"
pool_snapshot
(cd "$(dirname "$WORK")" && find "$(basename "$WORK")" -name '*.pickle' -print0 | tar czf "$OUT/converge-pickles.tgz" --null -T -)
cat "$OUT/converge.md"
