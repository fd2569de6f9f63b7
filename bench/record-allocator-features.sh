#!/usr/bin/env bash
# reuse-sim on PyTorch's newer allocator features (issue 44), on a GPU
# machine with python3 and torch: each program of PROGDIR (default
# bench/allocator_features/: a torch.cuda.MemPool, settings changed with
# torch.cuda.memory._set_allocator_settings, an OOM inside a CUDA graph
# capture...) recorded unmodified with `gpumem reuse-sim record` uncapped
# (NAME), then under caps of 50 % and 80 % of its uncapped peak reserved
# (NAME_cap50, NAME_cap80), each snapshot replayed with --strategy
# torch-caching (under the cap the real run had, read from its statistics,
# with the program's allocator calls the hook recorded) and the five counters
# of torch.cuda.memory_stats() printed beside the replay's.
#
#   bench/record-allocator-features.sh GPUMEM_BIN OUTDIR [PROGDIR]
#
# Writes OUTDIR/summary.md (the table; "exact" or the differences) and every
# snapshot, statistics file, program output, replay document and replay
# warnings it made. Copy small recordings (NAME.pickle and NAME.stats.json)
# to tests/fixtures/allocator_features/ for tests/test_reuse_sim_features.cpp.
set -u
GPUMEM=${1:?usage: record-allocator-features.sh GPUMEM_BIN OUTDIR [PROGDIR]}
OUT=${2:?usage: record-allocator-features.sh GPUMEM_BIN OUTDIR [PROGDIR]}
HERE=$(cd "$(dirname "$0")" && pwd)
PROGS=${3:-$HERE/allocator_features}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.md
: > "$SUMMARY"

compare() {  # SNAPSHOT STATS: the replay under the recording's own cap (its statistics name it)
    "$GPUMEM" reuse-sim replay --trace "$1" --strategy torch-caching --json > "$1.replay.json" 2> "$1.replay.err"
    python3 - "$1.replay.json" "$2" <<'PY'
import json, sys
name = sys.argv[1].split("/")[-1].replace(".pickle.replay.json", "")
try:
    replay = json.load(open(sys.argv[1]))
    row = replay["strategies"][0]
except Exception as e:
    print("| %s | replay failed: %s |" % (name, e))
    sys.exit(0)
stats = json.load(open(sys.argv[2]))
mem = stats["memory_stats"]
keys = ("num_device_alloc", "num_device_free", "reserved_bytes.all.peak", "num_alloc_retries", "num_ooms")
want = tuple(mem.get(k, 0) for k in keys)
got = (row["upstream_allocs"], row["upstream_frees"], row["peak_reserved"], row["retries"], row["ooms"])
diffs = ["%s %+d" % (k, g - w) for k, w, g in zip(keys, want, got) if g != w]
calls = {}
for c in stats["allocator"].get("allocator_calls", []):
    calls[c["call"]] = calls.get(c["call"], 0) + 1
calls_text = ", ".join("%s %d" % kv for kv in sorted(calls.items())) or "none"
errors = stats["allocator"].get("hook_errors") or []
if errors:
    calls_text += "; hook errors: " + " / ".join(errors)
cap = stats["allocator"].get("allowed_memory_maximum")
print("| %s | %s | %d | %d | %d | %d | %d | %s | %s |" % (name, cap or "-", *want, calls_text,
                                                      "exact" if not diffs else "replay: " + ", ".join(diffs)))
PY
}

peak_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["memory_stats"].get("reserved_bytes.all.peak", 0))' "$1"; }

{
    echo "## reuse-sim record on programs with MemPools, settings changed as they run, OOMs in a capture"
    echo
    echo "$("$GPUMEM" --version 2>&1 | head -1); $(python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))' 2>&1)"
    echo
    echo "Recorded counters (torch.cuda.memory_stats()), the allocator calls the hook recorded, and the replay's"
    echo "difference (replayed - recorded)."
    echo
    echo "| snapshot | cap | device allocs | device frees | peak reserved | retries | OOMs | calls | replay |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"
} >> "$SUMMARY"
for prog in "$PROGS"/*.py; do
    [ -f "$prog" ] || continue
    p=$(basename "$prog" .py)
    "$GPUMEM" reuse-sim record -o "$OUT/$p.pickle" -- python3 "$prog" > "$OUT/$p.out" 2> "$OUT/$p.err"
    echo "$p: exit $?" >> "$OUT/exits.txt"
    if [ ! -f "$OUT/$p.stats.json" ]; then echo "| $p | - | recording failed (see $p.err) |" >> "$SUMMARY"; continue; fi
    compare "$OUT/$p.pickle" "$OUT/$p.stats.json" >> "$SUMMARY"
    peak=$(peak_of "$OUT/$p.stats.json")
    for pct in 50 80; do
        cap=$(( peak * pct / 100 / 1048576 * 1048576 ))
        [ "$cap" -gt 0 ] || continue
        name=${p}_cap$pct
        "$GPUMEM" reuse-sim record -o "$OUT/$name.pickle" --capacity "$cap" -- python3 "$prog" > "$OUT/$name.out" 2> "$OUT/$name.err"
        echo "$name: exit $?" >> "$OUT/exits.txt"
        if [ ! -f "$OUT/$name.stats.json" ]; then echo "| $name | $cap | recording failed (see $name.err) |" >> "$SUMMARY"; continue; fi
        compare "$OUT/$name.pickle" "$OUT/$name.stats.json" >> "$SUMMARY"
    done
done
cat "$SUMMARY"
