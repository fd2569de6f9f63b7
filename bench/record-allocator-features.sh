#!/usr/bin/env bash
# Issue 44 on a GPU machine: each program of bench/allocator_features/ (a
# private MemPool, allocator settings changed while it runs, an OOM inside a
# CUDA graph capture) recorded unmodified with
#   gpumem reuse-sim --record W/NAME.pickle -- python3 NAME.py
# uncapped, then under --capacity 50 % and 80 % of the uncapped run's peak
# reserved (NAME_cap50, NAME_cap80); each recording replayed as gpumem
# replays it by default (--trace X --strategy torch-caching --json, no
# --capacity: the cap in force its statistics record) and the five counters
# (device allocs, device frees, peak reserved, retries, OOMs) of the replay
# set beside the program's own torch.cuda.memory_stats() (the hook's
# X.stats.json, written at the program's exit).
#
#   GPUMEM=path/to/gpumem OUT=dir [GPU=0] [PROGRAMS="mempool ..."] bash bench/record-allocator-features.sh
#
# The programs run in parallel (one GPU: GPU); each program's three
# recordings in turn. $OUT gets allocator-features.md (the table) and
# allocator-features.tgz (every recording, xz-compressed where over 2 MiB,
# the statistics, the replays' documents and stderr, the programs' output).
# DEADLINE (s, default 300): no recording starts after it; RUN_TIMEOUT (120 s).
set -u
GPUMEM=${GPUMEM:-${1:-}}
OUT=${OUT:-${2:-/tmp/alloc-features-out}}
[ -x "$GPUMEM" ] || { echo "record-allocator-features.sh: no gpumem binary (set GPUMEM)" >&2; exit 2; }
GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")
HERE=$(cd "$(dirname "$0")" && pwd)
PROGS=${FEATURES_DIR:-$HERE/allocator_features}
PROGRAMS=${PROGRAMS:-"mempool settings_change graph_capture_oom"}
GPU=${GPU:-0}
DEADLINE=${DEADLINE:-300}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
WORK=${WORK:-/tmp/alloc-features-work}
unset PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
rm -rf "$WORK"
mkdir -p "$WORK" "$OUT"
START=$SECONDS
say() { echo "[$((SECONDS - START)) s] allocator features: $*" >&2; }

record() {  # NAME PROGRAM [--capacity BYTES]
    local name=$1 prog=$2
    shift 2
    if [ $((SECONDS - START)) -ge "$DEADLINE" ]; then echo "deadline" > "$WORK/$name.skipped"; say "$name: deadline, not run"; return 1; fi
    local t0=$SECONDS
    CUDA_VISIBLE_DEVICES=$GPU timeout -k 10 "$RUN_TIMEOUT" "$GPUMEM" reuse-sim --record "$WORK/$name.pickle" "$@" -- \
        python3 "$PROGS/$prog.py" > "$WORK/$name.out" 2> "$WORK/$name.err" < /dev/null
    echo $? > "$WORK/$name.exit"
    say "$name: --record exit $(cat "$WORK/$name.exit") in $((SECONDS - t0)) s: $(tail -1 "$WORK/$name.out")"
    if [ -f "$WORK/$name.pickle" ]; then
        "$GPUMEM" reuse-sim --trace "$WORK/$name.pickle" --strategy torch-caching --json > "$WORK/$name.replay.json" 2> "$WORK/$name.replay.err"
        echo $? > "$WORK/$name.replay.exit"
    fi
}

one_program() {  # PROGRAM
    local prog=$1 peak
    record "$prog" "$prog" || return
    peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["memory_stats"]["reserved_bytes.all.peak"])' \
        "$WORK/$prog.stats.json" 2>/dev/null)
    [ -n "$peak" ] || { say "$prog: no statistics from the uncapped run: no capped ones"; return; }
    for pct in 50 80; do
        record "${prog}_cap$pct" "$prog" --capacity $((peak * pct / 100)) || return
    done
}

pids=()
for prog in $PROGRAMS; do
    one_program "$prog" &
    pids+=($!)
done
wait "${pids[@]}"

# shellcheck disable=SC2086  # the names are split into words on purpose
python3 - "$WORK" $PROGRAMS > "$WORK/allocator-features.md" <<'PY'
import glob, json, os, sys
work, progs = sys.argv[1], sys.argv[2:]
keys = ("num_device_alloc", "num_device_free", "reserved_bytes.all.peak", "num_alloc_retries", "num_ooms")
print("# reuse-sim on PyTorch's newer allocator features (issue 44): recordings replayed with torch-caching")
print()
print("Counters: device allocs / device frees / peak reserved / retries / OOMs, the program's own torch.cuda.memory_stats() "
      "(the hook's stats.json) and the replay's (under the recording's cap in force).")
print()
print("| recording | cap in force | exit | program's last line | torch | replay | agree | replay's warnings |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
def read(p):
    try:
        return open(p, errors="replace").read()
    except OSError:
        return ""
for prog in progs:
    for name in (prog, prog + "_cap50", prog + "_cap80"):
        base = os.path.join(work, name)
        if os.path.exists(base + ".skipped"):
            print("| %s | not run: %s |" % (name, read(base + ".skipped").strip()))
            continue
        last = (read(base + ".out").strip().splitlines() or ["-"])[-1][:160]
        try:
            stats = json.load(open(base + ".stats.json"))
        except (OSError, ValueError):
            print("| %s | no recording: %s |" % (name, (read(base + ".err").strip().splitlines() or ["-"])[-1][:200]))
            continue
        mem, alloc = stats.get("memory_stats", {}), stats.get("allocator", {})
        want = tuple(mem.get(k) for k in keys)
        try:
            row = json.load(open(base + ".replay.json"))["strategies"][0]
            got = (row.get("upstream_allocs"), row.get("upstream_frees"), row.get("peak_reserved"), row.get("retries"), row.get("ooms"))
        except (OSError, ValueError, KeyError, IndexError) as e:
            got = None
        warn = " ".join(l.strip() for l in read(base + ".replay.err").splitlines() if l.strip())[:300]
        cap = alloc.get("allowed_memory_maximum")
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, cap if cap else "uncapped", read(base + ".exit").strip(), last.replace("|", "/"), "/".join(map(str, want)),
            "/".join(map(str, got)) if got else "replay failed (exit %s)" % read(base + ".replay.exit").strip(),
            "-" if got is None else "exact" if got == want else "DIFFERS", warn.replace("|", "/") or "-"))
PY
# Recordings become test fixtures: over 2 MiB, kept xz-compressed.
for f in "$WORK"/*.pickle; do
    [ -f "$f" ] || continue
    if [ "$(stat -c %s "$f")" -gt $((2 << 20)) ]; then xz -9 -T2 "$f" 2>/dev/null || gzip -9 "$f"; fi
done
ls -l "$WORK" > "$WORK/files.txt"
cp "$WORK/allocator-features.md" "$OUT/allocator-features.md"
tar czf "$OUT/allocator-features.tgz" -C "$(dirname "$WORK")" "$(basename "$WORK")"
say "done in $((SECONDS - START)) s"
cat "$OUT/allocator-features.md"
