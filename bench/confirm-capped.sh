#!/usr/bin/env bash
# tune --confirm on the capped CUDA-graph, side-stream and own-cap programs
# (issue 35): each recorded under --capacity CAP, tuned from its recording,
# and the best settings run for real (up to 3) under the same cap; the
# agreement table of each, predicted beside real.
#   bench/confirm-capped.sh GPUMEM_BIN OUTDIR
set -u
GPUMEM=${1:?usage: confirm-capped.sh GPUMEM_BIN OUTDIR}
OUT=${2:?usage: confirm-capped.sh GPUMEM_BIN OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
CAP=${CAP:-1GiB}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.md
: > "$SUMMARY"
for prog in side_stream_prefetch graph_release; do
  "$GPUMEM" reuse-sim record -o "$OUT/$prog.pickle" --capacity "$CAP" -- python3 "$HERE/torch_programs/$prog.py" \
    > "$OUT/$prog.record.out" 2> "$OUT/$prog.record.err"
  "$GPUMEM" reuse-sim tune --trace "$OUT/$prog.pickle" --capacity "$CAP" --confirm --max-runs 3 --json \
    -- python3 "$HERE/torch_programs/$prog.py" > "$OUT/$prog.confirm.json" 2> "$OUT/$prog.confirm.err"
  echo "exit $?" >> "$OUT/$prog.confirm.err"
  python3 - "$prog" "$OUT/$prog.confirm.json" >> "$SUMMARY" <<'PY'
import json, sys
name, doc = sys.argv[1], json.load(open(sys.argv[2]))
c = doc.get("confirm") or {}
print(f"## {name}\n")
print("| run | setting | OOMs predicted | real | peak predicted | real | retries predicted | real | held |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for r in c.get("runs", []):
    print(f"| {r['rank']} | `{r['setting']}` | {r['predicted_ooms']} | {r['real_ooms']} | {r['predicted_peak_reserved']} | {r['real_peak_reserved']} | {r['predicted_retries']} | {r['real_retries']} | {r['held']} |")
print(f"\nAnswer: {c.get('answer')}\n")
PY
done
cat "$SUMMARY"
