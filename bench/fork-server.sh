#!/usr/bin/env bash
# The fork server (max-batch's runs of python SCRIPT forked from a process
# that imported the script's modules once) against fresh processes, on one
# GPU: each program's whole search timed both ways, one after the other (fresh
# first), the answers, runs and how the runs started compared. Then
# max-batch-54.sh lightning (the race with Lightning's BatchSizeFinder).
#   OUT=$OUT GPUMEM=.device/gpumem bash bench/fork-server.sh [CASES]
# CASES: "PROGRAM@CAP ..." (default: lightning_vit and grad_accum under 6 GiB).
# $OUT gets fork-server.txt (a line a search) and fork-server-*.json.
set -u
OUT=${OUT:?set OUT}
GPUMEM=${GPUMEM:-.device/gpumem}
cd "$(dirname "$0")/.."
CASES=${1:-"batch_programs_w/lightning_vit.py@6GiB batch_programs/grad_accum.py@6GiB"}
log=$OUT/fork-server.txt
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
secs() { python3 -c 'import sys, time; print("%.1f" % (time.time() - float(sys.argv[1])))' "$1"; }
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc; "$GPUMEM" --version; } >"$log" 2>&1
for case in $CASES; do
    prog=${case%@*} cap=${case#*@} name=$(basename "${case%@*}" .py)
    for how in fresh forked; do
        extra=(); [ "$how" = fresh ] && extra=(--no-fork-server)
        json=$OUT/fork-server-$name-$cap-$how.json
        start=$(now)
        "$GPUMEM" reuse-sim max-batch --capacity "$cap" --json "${extra[@]}" -- python3 "bench/$prog" --bs '{batch}' --steps 3 \
            >"$json" 2>"$OUT/fork-server-$name-$cap-$how.err"
        rc=$? s=$(secs "$start")
        python3 - "$json" "$name@$cap $how: exit $rc, $s s" >>"$log" <<'PY'
import json, sys
try:
    m = json.load(open(sys.argv[1]))["max_batch"]
    forked = sum(1 for r in m["recordings"] if r.get("forked"))
    print("%s; answer %s, %d runs, %d forked; fork_server: %s; starts %s" % (
        sys.argv[2], m.get("largest_batch"), m["runs"], forked, m.get("fork_server"),
        " ".join("%s@%.1f%s" % (r["batch"], r["started_seconds"] or 0, "f" if r.get("forked") else "") for r in m["recordings"])))
except Exception as e:
    print("%s; no document (%s)" % (sys.argv[2], e))
PY
    done
done
cat "$log"
