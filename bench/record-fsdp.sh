#!/usr/bin/env bash
# reuse-sim on FSDP (issue 35, point 2: frees across streams), on a machine
# with 2 GPUs, python3, torch and torchrun: bench/torch_programs/fsdp_train.py
# under torchrun with 2 ranks, recorded by `gpumem reuse-sim record -o`
# uncapped (fsdp) and under --capacity CAP (fsdp_cap), each rank's snapshot
# replayed with torch-caching under the cap its run had, and the five
# counters of each rank's torch.cuda.memory_stats() printed beside the replay's.
#   bench/record-fsdp.sh GPUMEM_BIN OUTDIR
set -u
GPUMEM=${1:?usage: record-fsdp.sh GPUMEM_BIN OUTDIR}
OUT=${2:?usage: record-fsdp.sh GPUMEM_BIN OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
CAP=${CAP:-2GiB}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.md
{
  echo "| snapshot | device allocs | device frees | peak reserved | retries | OOMs | replay |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
} > "$SUMMARY"
for name in fsdp fsdp_cap; do
  cap=(); [ "$name" = fsdp_cap ] && cap=(--capacity "$CAP")
  "$GPUMEM" reuse-sim record -o "$OUT/$name.pickle" "${cap[@]}" -- torchrun --nproc-per-node 2 "$HERE/torch_programs/fsdp_train.py" 96 \
    > "$OUT/$name.record.out" 2> "$OUT/$name.record.err"
  echo "$name: exit $?; $(grep -c '^gpumem: recorded' "$OUT/$name.record.err") snapshots"
  for snap in "$OUT/$name".rank*.pickle; do
    stats=${snap%.pickle}.stats.json
    "$GPUMEM" reuse-sim replay --trace "$snap" --strategy torch-caching --json > "$snap.replay.json" 2> "$snap.replay.err"
    python3 - "$snap" "$snap.replay.json" "$stats" >> "$SUMMARY" <<'PY'
import json, sys
snap, replay, stats = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))["memory_stats"]
row = replay["strategies"][0]
want = (stats["num_device_alloc"], stats["num_device_free"], stats["reserved_bytes.all.peak"], stats["num_alloc_retries"], stats["num_ooms"])
got = (row["upstream_allocs"], row["upstream_frees"], row["peak_reserved"], row["retries"], row["ooms"])
print("| %s | %d | %d | %d | %d | %d | %s |" % (snap.split("/")[-1], *want, "exact" if want == got else "DIFFERS: replay %s" % (got,)))
PY
  done
done
cat "$SUMMARY"
