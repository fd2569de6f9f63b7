#!/usr/bin/env bash
# reuse-sim on programs that use CUDA graphs and side streams (issue 35,
# points 1 and 2), on a GPU machine with python3 and torch: each program of
# bench/torch_programs/ below recorded with `gpumem reuse-sim record -o`
# uncapped (NAME) and under --capacity 1GiB (NAME_cap), each snapshot replayed
# with --strategy torch-caching (under the cap the real run had), and the five
# counters of torch.cuda.memory_stats() printed beside the replay's.
#
#   bench/record-graphs.sh GPUMEM_BIN OUTDIR
#
# Writes OUTDIR/summary.md (the table) and every snapshot, statistics file,
# program output and replay document it made.
set -u
GPUMEM=${1:?usage: record-graphs.sh GPUMEM_BIN OUTDIR}
OUT=${2:?usage: record-graphs.sh GPUMEM_BIN OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PROGS=$HERE/torch_programs
CAP=${CAP:-1GiB}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.md
: > "$SUMMARY"

# The replay of a snapshot beside its recording's own counters (as in
# record-confirm.sh): replayed under the cap the real run had.
compare() {  # SNAPSHOT STATS
    local cap_args=()
    local allowed
    allowed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["allocator"].get("allowed_memory_maximum") or "")' "$2")
    [ -n "$allowed" ] && cap_args=(--capacity "$allowed")
    "$GPUMEM" reuse-sim replay --trace "$1" --strategy torch-caching "${cap_args[@]}" --json > "$1.replay.json" 2> "$1.replay.err"
    python3 - "$1.replay.json" "$2" <<'PY'
import json, sys
name = sys.argv[1].split("/")[-1].replace(".pickle.replay.json", "")
try:
    replay = json.load(open(sys.argv[1]))
    row = replay["strategies"][0]
except Exception as e:
    print("| %s | replay failed: %s |" % (name, e))
    sys.exit(0)
stats = json.load(open(sys.argv[2]))["memory_stats"]
keys = ("num_device_alloc", "num_device_free", "reserved_bytes.all.peak", "num_alloc_retries", "num_ooms")
want = tuple(stats.get(k, 0) for k in keys)
got = (row["upstream_allocs"], row["upstream_frees"], row["peak_reserved"], row["retries"], row["ooms"])
diffs = ["%s %+d" % (k, g - w) for k, w, g in zip(keys, want, got) if g != w]
print("| %s | %d | %d | %d | %d | %d | %s |" % (name, *want, "exact" if not diffs else "replay: " + ", ".join(diffs)))
PY
}

{
    echo "## reuse-sim record -o on CUDA graph and side-stream programs, replayed with torch-caching"
    echo
    echo "Recorded counters (torch.cuda.memory_stats()); the last column gives the replay's difference (replayed - recorded)."
    echo
    echo "| snapshot | device allocs | device frees | peak reserved | retries | OOMs | replay |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
} >> "$SUMMARY"
for p in graph_capture graphed_callables compile_reduce_overhead side_stream_prefetch graph_release; do
    for variant in plain cap; do
        name=$p cap_args=()
        if [ $variant = cap ]; then name=${p}_cap cap_args=(--capacity "$CAP"); fi
        start=$(date +%s.%N)
        "$GPUMEM" reuse-sim record -o "$OUT/$name.pickle" "${cap_args[@]}" -- python3 "$PROGS/$p.py" \
            > "$OUT/$name.record.out" 2> "$OUT/$name.record.err"
        echo "$name: record exit $? in $(python3 -c "import time;print(round(time.time()-$start,1))") s: $(tail -1 "$OUT/$name.record.out")" >&2
        if [ -f "$OUT/$name.pickle" ]; then compare "$OUT/$name.pickle" "$OUT/$name.stats.json" >> "$SUMMARY"
        else echo "| $name | no snapshot: $(tail -1 "$OUT/$name.record.err") |" >> "$SUMMARY"; fi
    done
done
cat "$SUMMARY"
