#!/usr/bin/env bash
# Are pinned h2d copies slow right after a process that filled 90% of the
# GPU's memory exits (as a Slurm prolog's check runs right after a job)?
# Prints the median and best h2d rate of a 256 MiB copy (3 samples) as a
# baseline, then every ~0.5 s for 6 s after each of two fills, and after a
# `check --level long`. Runs on the GPU machine:
#   bash bench/h2d-after-free.sh [DIR]   (DIR holds gpumem; default .device)
set -u
G=${1:-.device}/gpumem
[ -x "$G" ] || { echo "missing $G" >&2; exit 2; }
rate() {
  "$G" copy h2d -s 256MiB --samples 3 --json 2>/dev/null | python3 -c '
import json, sys
try:
    r = json.load(sys.stdin)["results"][0]
    print("median %.1f best %.1f GB/s" % (r["median_gbps"], r["max_gbps"]))
except Exception as e:
    print("? (%s)" % e)'
}
since() { awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $1}"; }
echo "baseline: $(rate)"
for round in 1 2; do
  "$G" alloc-test fill 90% >/dev/null 2>&1
  t0=$(date +%s.%N)
  for _ in $(seq 12); do echo "after fill $round, t=$(since "$t0") s: $(rate)"; done
done
"$G" check --level long >/dev/null 2>&1
t0=$(date +%s.%N)
for _ in $(seq 8); do echo "after check --level long, t=$(since "$t0") s: $(rate)"; done
