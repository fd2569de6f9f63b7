#!/usr/bin/env bash
# max-batch on a Lightning program under DDP over NCCL (Trainer(strategy="ddp"),
# one process on one GPU): bench/batch_programs_w/lightning_vit.py under CAP,
# then its answer run N times at once under PyTorch's own cap
# (bench/cap_run.py, no hook) and the next batch twice.
#   OUT=$OUT GPUMEM=.device/gpumem [CAP=6GiB] [N=5] bash bench/lightning-ddp.sh
# $OUT gets lightning-ddp.json (gpumem's document) and lightning-ddp.txt.
set -u
OUT=${OUT:?set OUT} GPUMEM=${GPUMEM:?set GPUMEM}
cd "$(dirname "$0")/.."
CAP=${CAP:-6GiB} N=${N:-5}
cap_bytes=$(python3 -c "import sys; u={'GiB':1<<30,'MiB':1<<20}; s=sys.argv[1]; print(int(s[:-3])*u[s[-3:]])" "$CAP")
prog=bench/batch_programs_w/lightning_vit.py
txt=$OUT/lightning-ddp.txt
start=$(date +%s.%N)
"$GPUMEM" reuse-sim max-batch --capacity "$CAP" --json -- python3 "$prog" --bs '{batch}' --steps 3 --strategy ddp \
    >"$OUT/lightning-ddp.json" 2>"$OUT/lightning-ddp.err"
rc=$?
end=$(date +%s.%N)
python3 - "$OUT/lightning-ddp.json" "$rc" "$start" "$end" >"$txt" 2>&1 <<'PY'
import json, sys
doc, rc, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
m = json.load(open(doc))["max_batch"]
print("gpumem exit %s, %.1f s: %s" % (rc, end - start, m["answer"]))
for k in ("largest_batch", "runs", "repeats", "timing", "held_late", "held_late_bytes", "varies"):
    print(k, m.get(k))
PY
answer=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['max_batch']['largest_batch'])" "$OUT/lightning-ddp.json" 2>/dev/null)
case $answer in ''|None) cat "$txt"; exit 1 ;; esac
work=$(mktemp -d /tmp/lightning-ddp.XXXXXX)
for i in $(seq 1 "$N"); do
    timeout 150 python3 bench/cap_run.py --cap "$cap_bytes" --stats "$work/at-$i.json" -- "$prog" --bs "$answer" --steps 3 --strategy ddp >"$work/at-$i.log" 2>&1 &
done
for i in 1 2; do
    timeout 150 python3 bench/cap_run.py --cap "$cap_bytes" --stats "$work/next-$i.json" -- "$prog" --bs $((answer + 1)) --steps 3 --strategy ddp >"$work/next-$i.log" 2>&1 &
done
wait
python3 - "$work" "$answer" >>"$txt" <<'PY'
import glob, json, os, sys
work, answer = sys.argv[1], int(sys.argv[2])
for kind, batch in (("at", answer), ("next", answer + 1)):
    verdicts = []
    for f in sorted(glob.glob(os.path.join(work, kind + "-*.json"))):
        try:
            verdicts.append(json.load(open(f)).get("verdict"))
        except ValueError:
            verdicts.append("no stats")
    print("batch %d under PyTorch's own cap: %d of %d fit (%s)" % (batch, verdicts.count("fits"), len(verdicts), ", ".join(verdicts)))
PY
cat "$txt"
