#!/usr/bin/env bash
# Issue 54's DDP answer under the held bound: gpumem's max-batch on the DDP
# MLP (bench/torchrun_programs/ddp_mlp.py, one rank over NCCL, 3 steps)
# under CAP, its runs holding DDP's first buckets through the second step
# (the hook's _hold_late_frees); then the answer run N times at once as a
# user runs it (PyTorch's own cap, bench/cap_run.py, no hook), and the
# unheld answer of an earlier search (UNHELD, 20607 on an H200 at 4 GiB)
# N times after it: the held answer must fit every time.
#   OUT=$OUT GPUMEM=.device/gpumem [CAP=4GiB] [N=24] [UNHELD=20607] bash bench/ddp-held.sh
# $OUT gets ddp-held.json (gpumem's document), ddp-held.txt (its answer and
# wall time) and ddp-variance-{held,unheld}.txt (bench/ddp-variance.sh's).
set -u
OUT=${OUT:?set OUT} GPUMEM=${GPUMEM:?set GPUMEM}
cd "$(dirname "$0")/.."
CAP=${CAP:-4GiB} N=${N:-24} UNHELD=${UNHELD:-20607}
cap_bytes=$(python3 -c "import sys; u={'GiB':1<<30,'MiB':1<<20}; s=sys.argv[1]; print(int(s[:-3])*u[s[-3:]])" "$CAP")
start=$(date +%s.%N)
"$GPUMEM" reuse-sim max-batch --capacity "$CAP" --json -- torchrun --standalone --nproc-per-node 1 \
    bench/torchrun_programs/ddp_mlp.py --bs '{batch}' --steps 3 >"$OUT/ddp-held.json" 2>"$OUT/ddp-held.err"
rc=$?
end=$(date +%s.%N)
answer=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['max_batch']['largest_batch'])" "$OUT/ddp-held.json" 2>/dev/null)
{ echo "gpumem exit $rc, $(python3 -c "print(round($end - $start, 1))") s, answer ${answer:-none}"
  python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))['max_batch']
print(m['answer'])
for k in ('runs', 'repeats', 'timing', 'held_late', 'held_late_bytes', 'varies', 'jobs'):
    print(k, m.get(k))" "$OUT/ddp-held.json"; } >"$OUT/ddp-held.txt" 2>&1
[ -n "$answer" ] && [ "$answer" != None ] || exit 1
mkdir -p "$OUT/held" "$OUT/unheld"
# One after the other: 2 x N runs at once would not fit in an H200's memory.
OUT=$OUT/held WAYS=default bash bench/ddp-variance.sh "$answer" "$cap_bytes" "$N" >/dev/null
OUT=$OUT/unheld WAYS=default bash bench/ddp-variance.sh "$UNHELD" "$cap_bytes" "$N" >/dev/null
mv "$OUT/held/ddp-variance.txt" "$OUT/ddp-variance-held.txt"; mv "$OUT/unheld/ddp-variance.txt" "$OUT/ddp-variance-unheld.txt"
rm -rf "$OUT/held" "$OUT/unheld"
grep -h "fit\b\|fits\|of $N" "$OUT/ddp-held.txt" "$OUT"/ddp-variance-*.txt | head -20
