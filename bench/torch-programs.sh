#!/usr/bin/env bash
# reuse-sim record -o on three kinds of real PyTorch programs of issue 35
# (bench/torch_programs/, run unmodified), on a GPU machine with python3 and
# torch:
#   own_fraction      caps itself (set_per_process_memory_fraction, 1 GiB)
#                     and skips the batches that run out of memory: recorded
#                     uncapped and under gpumem's --capacity 2GiB (which the
#                     program's own call replaces), each replayed with no
#                     --capacity (the recording's cap in force is the
#                     replay's); then tune --confirm on it;
#   spawn_child       a parent and a child (multiprocessing, spawn), both on
#                     CUDA: two files (FILE, FILE.proc2), each replayed;
#   alloc_conf_train  recorded with PYTORCH_ALLOC_CONF=expandable_segments:True
#                     (and, to show which name wins, the old name set to
#                     something else), replayed.
# Each replay's five counters beside torch.cuda.memory_stats() of its
# recording, in OUTDIR/summary.md, with gpumem's stderr lines.
#
#   bench/torch-programs.sh GPUMEM_BIN OUTDIR
set -u
GPUMEM=${1:?usage: torch-programs.sh GPUMEM_BIN OUTDIR}
OUT=${2:?usage: torch-programs.sh GPUMEM_BIN OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PROGS=$HERE/torch_programs
mkdir -p "$OUT"
SUMMARY=$OUT/summary.md
python3 -c 'import torch; print("torch", torch.__version__, "on", torch.cuda.get_device_name())' > "$SUMMARY" 2>&1
echo >> "$SUMMARY"

# A snapshot replayed as gpumem replays it by default (no --capacity: the
# cap in force that its statistics record), beside the recording's counters.
compare() {  # NAME SNAPSHOT
    local stats=${2%.pickle}.stats.json
    "$GPUMEM" reuse-sim replay --trace "$2" --strategy torch-caching --json > "$2.replay.json" 2> "$2.replay.err"
    python3 - "$1" "$2.replay.json" "$stats" <<'PY'
import json, sys
name, replay, recording = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
stats, row = recording["memory_stats"], replay["strategies"][0]
want = tuple(stats.get(k) for k in ("num_device_alloc", "num_device_free", "reserved_bytes.all.peak", "num_alloc_retries", "num_ooms"))
got = (row["upstream_allocs"], row["upstream_frees"], row["peak_reserved"], row["retries"], row["ooms"])
cap = replay.get("recorded_cap") or {}
print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
    name, replay["input"]["description"].split(" (")[0].split("/")[-1], "%s by %s" % (cap.get("allowed_memory_maximum"), cap.get("set_by")) if cap else "-",
    "/".join(map(str, want)), "/".join(map(str, got)), "exact" if want == got else "DIFFERS",
    replay.get("fewer_ooms_than_recorded") or "-", recording["allocator"].get("PYTORCH_ALLOC_CONF"),
    recording["allocator"].get("PYTORCH_CUDA_ALLOC_CONF")))
PY
}

{
    echo "Counters: device allocs/device frees/peak reserved/retries/OOMs, torch's (recording) and the replay's."
    echo
    echo "| case | snapshot | recorded cap in force | torch | replay | agree | fewer OOMs warning | PYTORCH_ALLOC_CONF | PYTORCH_CUDA_ALLOC_CONF |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
} >> "$SUMMARY"
LINES=""
record() {  # NAME PROGRAM [GPUMEM OPTIONS...] -- env assignments come from the caller
    local name=$1 program=$2
    shift 2
    rm -f "$OUT/$name".*pickle "$OUT/$name".*stats.json
    "$GPUMEM" reuse-sim record -o "$OUT/$name.pickle" "$@" -- python3 "$PROGS/$program.py" > "$OUT/$name.record.out" 2> "$OUT/$name.record.err"
    echo "$name: record exit $?" >&2
    LINES+="$name:"$'\n'"$(grep '^gpumem:' "$OUT/$name.record.err")"$'\n'
    local found=0
    for f in "$OUT/$name.pickle" "$OUT/$name".proc*.pickle; do
        [ -f "$f" ] || continue
        found=1
        compare "$name" "$f" >> "$SUMMARY"
    done
    [ $found = 1 ] || echo "| $name | no snapshot: $(tail -1 "$OUT/$name.record.err") |" >> "$SUMMARY"
}
record own_fraction own_fraction
record own_fraction_capped own_fraction --capacity 2GiB
record spawn_child spawn_child
PYTORCH_ALLOC_CONF=expandable_segments:True PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 record alloc_conf alloc_conf_train
PYTORCH_ALLOC_CONF=expandable_segments:True record alloc_conf_new_name alloc_conf_train
{ echo; echo "gpumem's lines of each --record:"; echo; echo '```'; echo "$LINES"; echo '```'; } >> "$SUMMARY"

# tune --confirm on the program that caps itself: the replay's cap is
# the recording's (no --capacity), and the real rerun caps itself again.
if [ -f "$OUT/own_fraction.pickle" ]; then
    "$GPUMEM" reuse-sim tune --trace "$OUT/own_fraction.pickle" --confirm --json -- python3 "$PROGS/own_fraction.py" \
        > "$OUT/own_fraction.confirm.json" 2> "$OUT/own_fraction.confirm.err"
    echo "own_fraction: --confirm exit $?" >&2
    {
        echo
        echo "## tune --confirm on own_fraction"
        echo
        echo "| run | setting | OOMs predicted | real | peak predicted | real | retries predicted | real | allocs predicted | real | held |"
        echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        python3 - "$OUT/own_fraction.confirm.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
c = doc.get("confirm") or {}
for run in c.get("runs", []):
    print("| %d | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        run["rank"], run["setting"] or "(defaults)", run["predicted_ooms"], run["real_ooms"], run["predicted_peak_reserved"],
        run["real_peak_reserved"], run["predicted_retries"], run["real_retries"], run["predicted_device_allocs"],
        run["real_device_allocs"], "yes" if run["held"] else "no"))
print()
print("capacity of the replay:", doc.get("capacity_bytes"), "recorded cap:", json.dumps(doc.get("recorded_cap")))
print()
print("Answer:", c.get("answer", doc.get("error")))
PY
    } >> "$SUMMARY"
fi
cat "$SUMMARY"
