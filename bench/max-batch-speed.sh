#!/usr/bin/env bash
# Benchmark of reuse-sim max-batch's core (issue 37): the answer for a
# 1 M-event pair of recordings (the stand-in training program of
# bench/max-batch-gen.py at batch 8 and 16, 1 M events each, gpumem CSV)
# under a 16 GiB cap, on THREADS threads (default 2), timed by phase by
# build/bench/max_batch_speed (it calls src/reuse_sim/batch_model.hpp
# directly, until the command lands): PyTorch's default setting alone, and
# tune's grid. Two pairs: one that the model aligns completely, one with a
# 64 MiB workspace from batch 12 on (extras: the answer is a range). Each
# answer is then confirmed by generating the program at the answer and the
# next batch and replaying them with gpumem reuse-sim (the truth the model
# stands in for). Figures: medians over RUNS (default 3) runs.
#   bench/max-batch-speed.sh [BUILD_DIR [OUT]]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-bench/results/$(date +%F)-max-batch-speed.md}
runs=${RUNS:-3} threads=${THREADS:-2}
bench=$build/bench/max_batch_speed
[ -x "$bench" ] && [ -x "$build/gpumem" ] || { echo "max-batch-speed.sh: no $bench or $build/gpumem (build first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "max-batch-speed.sh: needs python3" >&2; exit 2; }
work=$(mktemp -d /tmp/gpumem-max-batch-XXXXXX)
trap 'rm -rf "$work"' EXIT
cap=$((16 << 30)) events=1000000

# fits B WORKSPACE_FROM: "ooms peak_reserved" of the program's own trace at batch B.
fits() {
  python3 bench/max-batch-gen.py "$1" $events "$work/truth.csv" 1 "$2"
  "$build/gpumem" reuse-sim replay --trace "$work/truth.csv" --strategy torch-caching --capacity $cap --json |
    python3 -c 'import json, sys; s = json.load(sys.stdin)["strategies"][0]; print(s["ooms"], s["peak_reserved"])'
}

{
  echo "# reuse-sim max-batch's core on a 1 M-event pair ($(date +%F))"
  echo
  echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), no GPU; threads: $threads; runs: $runs (medians)."
  echo "Command: \`bench/max-batch-speed.sh $build\` (build/bench/max_batch_speed CAPACITY THREADS default|tune 8=bs8.csv 16=bs16.csv)."
  echo "Input: bench/max-batch-gen.py at batch 8 and 16, 1 M events each (400 weights, 416 steps of 1,000 activations"
  echo "affine in the batch and 200 constant temporaries), capacity 16 GiB."
  echo
  echo "| pair | lanes | read s | fit s | search s | total wall s | total CPU s | replays | answer (cautious..hopeful) | truth: ooms at answer / next |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
} >"$work/table"

for pair in aligned workspace; do
  from=0; [ $pair = workspace ] && from=12
  echo "generating the $pair pair..." >&2
  python3 bench/max-batch-gen.py 8 $events "$work/bs8.csv" 1 $from
  python3 bench/max-batch-gen.py 16 $events "$work/bs16.csv" 1 $from
  for lanes in default tune; do
    : >"$work/runs"
    for i in $(seq "$runs"); do
      echo "$pair, $lanes: run $i of $runs..." >&2
      "$bench" $cap "$threads" $lanes 8="$work/bs8.csv" 16="$work/bs16.csv" >"$work/out"
      cat "$work/out" >&2
      awk '/^read/ {r=$3} /^fit/ {f=$3} /^search/ {s=$3} /^total/ {w=$3; c=$6; n=$(NF-1)} END {print r, f, s, w, c, n}' "$work/out" >>"$work/runs"
    done
    answer=$(sed -n 's/^answer   largest batch (defaults): \([0-9a-z]*\); hopeful \([0-9a-z-]*\);.*/\1 \2/p' "$work/out")
    set -- $answer
    largest=$1 hopeful=$2
    truth="-"
    if [ "$lanes" = default ] && [ "$largest" != none ]; then
      truth="$(fits "$largest" $from | cut -d' ' -f1) / $(fits $((largest + 1)) $from | cut -d' ' -f1)"
      [ "$hopeful" != - ] && truth="$truth; at hopeful $hopeful: $(fits "$hopeful" $from | cut -d' ' -f1)"
    fi
    range=$largest; [ "$hopeful" != - ] && range="$largest..$hopeful"
    best=$(sed -n 's/^best     largest batch over the grid: //p' "$work/out")
    [ -n "$best" ] && range="$range (defaults); best $best"
    python3 - "$work/runs" "$pair" "$lanes" "$range" "$truth" >>"$work/table" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
med = [statistics.median(c) for c in zip(*rows)]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | {med[3]:.2f} | {med[4]:.2f} | {int(med[5])} | {sys.argv[4]} | {sys.argv[5]} |")
PY
  done
done
cp "$work/table" "$out"
cat "$out"
