#!/usr/bin/env bash
# reuse-sim's record / tune / confirm workflow on real PyTorch programs
# (bench/torch_programs/, run unmodified), on a GPU machine with python3 and
# torch:
#   1. each program recorded with `gpumem reuse-sim record` (under a 1 GiB
#      cap applied to the real run) and its snapshot replayed: the replay's
#      five counters must equal torch.cuda.memory_stats() of the recording;
#   2. `tune --confirm --max-runs 3` on the programs whose recording had OOMs: real
#      reruns under the best settings, predicted beside real, per run;
#   3. with --two-gpus: torchrun with 2 ranks recorded, one file per rank,
#      each replayed exact.
#
#   bench/record-confirm.sh GPUMEM_BIN OUTDIR [--two-gpus]
#
# Writes OUTDIR/summary.md (the tables) and every snapshot, statistics file
# and JSON document it made.
set -u
GPUMEM=${1:?usage: record-confirm.sh GPUMEM_BIN OUTDIR [--two-gpus]}
OUT=${2:?usage: record-confirm.sh GPUMEM_BIN OUTDIR [--two-gpus]}
TWO=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PROGS=$HERE/torch_programs
CAP=${CAP:-1GiB}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.md
: > "$SUMMARY"

# The replay of a snapshot beside its recording's own counters.
compare() {  # SNAPSHOT STATS: replayed under the cap the real run had (allowed_memory_maximum)
    local cap_args=()
    local allowed
    allowed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["allocator"].get("allowed_memory_maximum") or "")' "$2")
    [ -n "$allowed" ] && cap_args=(--capacity "$allowed")
    "$GPUMEM" reuse-sim replay --trace "$1" --strategy torch-caching "${cap_args[@]}" --json > "$1.replay.json" 2> "$1.replay.err"
    python3 - "$1.replay.json" "$2" <<'PY'
import json, sys
replay, stats = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["memory_stats"]
row = replay["strategies"][0]
want = (stats["num_device_alloc"], stats["num_device_free"], stats["reserved_bytes.all.peak"], stats["num_alloc_retries"], stats["num_ooms"])
got = (row["upstream_allocs"], row["upstream_frees"], row["peak_reserved"], row["retries"], row["ooms"])
print("| %s | %d | %d | %d | %d | %d | %s |" % (sys.argv[1].split("/")[-1].replace(".replay.json", ""), *want, "exact" if want == got else "DIFFERS: %s" % (got,)))
PY
}

{
    echo "## 1. Recorded with reuse-sim record (cap $CAP on the real run), replayed"
    echo
    echo "| snapshot | device allocs | device frees | peak reserved | retries | OOMs | replay |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
} >> "$SUMMARY"
for p in train_cnn frag_skip halve_batch kv_cache skip_batch; do
    start=$(date +%s.%N)
    "$GPUMEM" reuse-sim record -o "$OUT/$p.pickle" --capacity "$CAP" -- python3 "$PROGS/$p.py" > "$OUT/$p.record.out" 2> "$OUT/$p.record.err"
    echo "$p: record exit $? in $(python3 -c "import time;print(round(time.time()-$start,1))") s" >&2
    if [ -f "$OUT/$p.pickle" ]; then compare "$OUT/$p.pickle" "$OUT/$p.stats.json" >> "$SUMMARY"
    else echo "| $p | no snapshot: $(tail -1 "$OUT/$p.record.err") |" >> "$SUMMARY"; fi
done

{
    echo
    echo "## 2. tune --confirm --max-runs 3 on the recordings with OOMs (cap $CAP)"
    echo
    echo "| program | run | PYTORCH_CUDA_ALLOC_CONF | OOMs predicted | real | peak predicted | real | retries predicted | real | wall s | exit | held |"
    echo "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
} >> "$SUMMARY"
ANSWERS=""
for p in train_cnn frag_skip halve_batch kv_cache skip_batch; do
    [ -f "$OUT/$p.pickle" ] || continue
    "$GPUMEM" reuse-sim tune --trace "$OUT/$p.pickle" --capacity "$CAP" --confirm --max-runs 3 --json -- python3 "$PROGS/$p.py" \
        > "$OUT/$p.confirm.json" 2> "$OUT/$p.confirm.err"
    echo "$p: --confirm exit $?" >&2
    ANSWERS+=$(python3 - "$OUT/$p.confirm.json" "$p" 3>&1 >> "$SUMMARY" <<'PY'
import json, os, sys
doc = json.load(open(sys.argv[1]))
c = doc.get("confirm") or {}
for run in c.get("runs", []):
    print("| %s | %d | `%s` | %s | %s | %s | %s | %s | %s | %.1f | %d | %s |" % (
        sys.argv[2], run["rank"], run["setting"] or "(defaults)", run["predicted_ooms"], run["real_ooms"],
        run["predicted_peak_reserved"], run["real_peak_reserved"], run["predicted_retries"], run["real_retries"],
        run["wall_seconds"], run["exit_status"], "yes" if run["held"] else "no"))
t = doc.get("tune") or {}
os.write(3, ("- %s: recorded %s OOM events, best changes course: %s. %s\n" % (
    sys.argv[2], t.get("recorded_oom_events"), t.get("best_changes_course"), c.get("answer", doc.get("error")))).encode())
PY
)$'\n'
done
{ echo; echo "Answers:"; echo; echo "$ANSWERS"; } >> "$SUMMARY"

if [ "$TWO" = "--two-gpus" ]; then
    {
        echo "## 3. torchrun, 2 ranks on 2 GPUs, recorded with --record"
        echo
        echo "| snapshot | device allocs | device frees | peak reserved | retries | OOMs | replay |"
        echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
    } >> "$SUMMARY"
    "$GPUMEM" reuse-sim record -o "$OUT/ddp.pickle" -- torchrun --standalone --nproc-per-node 2 "$PROGS/ddp_train.py" \
        > "$OUT/ddp.record.out" 2> "$OUT/ddp.record.err"
    echo "torchrun: record exit $?" >&2
    for r in 0 1; do
        if [ -f "$OUT/ddp.rank$r.pickle" ]; then compare "$OUT/ddp.rank$r.pickle" "$OUT/ddp.rank$r.stats.json" >> "$SUMMARY"
        else echo "| ddp.rank$r.pickle | missing |" >> "$SUMMARY"; fi
    done
    grep '^gpumem:' "$OUT/ddp.record.err" >> "$SUMMARY"
fi
cat "$SUMMARY"
