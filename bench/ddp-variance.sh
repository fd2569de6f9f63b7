#!/usr/bin/env bash
# Issue 54's DDP variance on one GPU: the DDP MLP (bench/torchrun_programs/
# ddp_mlp.py) under one rank over NCCL, at one batch near its cap, run N times
# at once under PyTorch's own cap (bench/cap_run.py), in four ways:
#   default   as written
#   sync      torch.cuda.synchronize() after each step
#   settle    that, then 0.5 s asleep (NCCL's watchdog thread has polled)
#   gloo      over gloo (no NCCL stream, no watchdog)
# A way whose runs all fit where the default's do not names what the
# variance needs.
#   OUT=$OUT [WAYS="default sync"] bash bench/ddp-variance.sh [BATCH [CAP_BYTES [N]]]
# $OUT gets ddp-variance.txt (a line a run: fits or OOM, peak reserved and
# allocated, and each step's memory) and ddp-variance.tgz (the runs' logs).
set -u
OUT=${OUT:?set OUT}
cd "$(dirname "$0")/.."
BATCH=${1:-20607} CAP=${2:-4294967296} N=${3:-12}
work=$(mktemp -d /tmp/ddp-variance.XXXXXX)
log=$OUT/ddp-variance.txt
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())'; } >"$log" 2>&1
echo "ddp_mlp.py --bs $BATCH --steps 3 under $CAP bytes (PyTorch's own cap), one rank, $N runs at once a way" >>"$log"
for way in ${WAYS:-default sync settle gloo}; do
    case $way in default) extra=() ;; sync) extra=(--sync) ;; settle) extra=(--settle 0.5) ;; gloo) extra=(--backend gloo) ;; esac
    for i in $(seq 1 "$N"); do
        timeout 120 torchrun --standalone --nproc-per-node 1 bench/cap_run.py --cap "$CAP" --stats "$work/$way-$i.json" -- \
            bench/torchrun_programs/ddp_mlp.py --bs "$BATCH" --steps 3 "${extra[@]}" >"$work/$way-$i.log" 2>&1 &
    done
    wait
    python3 - "$work" "$way" "$N" >>"$log" <<'PY'
import json, os, re, sys
work, way, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fits = 0
lines = []
for i in range(1, n + 1):
    try:
        s = json.load(open(os.path.join(work, "%s-%d.json" % (way, i))))
    except (OSError, ValueError) as e:
        lines.append("  run %d: no stats (%s)" % (i, e))
        continue
    fits += s.get("verdict") == "fits"
    steps = re.findall(r"step (\d): allocated (\d+) reserved (\d+) inactive split (\d+)", open(os.path.join(work, "%s-%d.log" % (way, i))).read())
    lines.append("  run %d: %s, peak reserved %s, peak allocated %s; steps (MiB allocated/reserved/inactive split): %s" % (
        i, s.get("verdict"), s.get("peak_reserved"), s.get("peak_allocated"),
        " ".join("%s/%s/%s" % (int(a) >> 20, int(r) >> 20, int(x) >> 20) for _, a, r, x in steps)))
print("%s: %d of %d fit" % (way, fits, n))
print("\n".join(lines))
PY
done
tar -czf "$OUT/ddp-variance.tgz" -C "$work" .
cat "$log"
