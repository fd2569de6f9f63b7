#!/usr/bin/env bash
# Benchmark of `gpumem reuse-sim tune` on a large trace (issue 23, item 2):
# the random 4-stream trace of bench/reuse-sim.sh (its random_trace, seed 1)
# with 1 M events, under --capacity 8GiB. Each run times one torch-caching
# replay of the trace and then --tune, back to back, and takes their ratio;
# the figures are the medians over the runs (wall clock, and user+system CPU
# seconds, which a shared machine's load moves less). Goal: --tune within 25
# times one replay.
#   bench/tune-speed.sh [BUILD_DIR [BEFORE_BINARY [OUT]]]
#   RUNS (default 3) runs of BUILD_DIR/gpumem; RUNS_BEFORE (default 1) of BEFORE_BINARY.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/gpumem
before=${2:-}
out=${3:-bench/results/$(date +%F)-tune-speed.md}
runs=${RUNS:-3} runs_before=${RUNS_BEFORE:-1}
[ -x "$bin" ] || { echo "tune-speed.sh: no $bin (build first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "tune-speed.sh: needs python3" >&2; exit 2; }
work=$(mktemp -d /tmp/gpumem-tune-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
# The trace generator of bench/reuse-sim.sh, one definition for both.
source <(sed -n '/^random_trace() {/,/^}/p' bench/reuse-sim.sh)
echo "generating the trace..." >&2
random_trace 1000000 4 "$work/trace.csv"
capacity=8GiB

# timed FILE CMD...: wall and CPU (user+sys) seconds of CMD, appended to FILE as "wall cpu".
timed() {
  local file=$1; shift
  /usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >"$work/stdout"
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/time" >>"$file"
}

# measure BINARY RUNS NAME: RUNS pairs of (one replay, --tune); the last --tune's JSON kept.
measure() {
  local b=$1 n=$2 name=$3
  : >"$work/$name.one"; : >"$work/$name.tune"
  for i in $(seq "$n"); do
    echo "$name: run $i of $n..." >&2
    timed "$work/$name.one" "$b" reuse-sim replay --trace "$work/trace.csv" --strategy torch-caching --capacity $capacity --json
    timed "$work/$name.tune" "$b" reuse-sim tune --trace "$work/trace.csv" --capacity $capacity --json
    cp "$work/stdout" "$work/$name.json"
  done
}

measure "$bin" "$runs" after
[ -n "$before" ] && measure "$before" "$runs_before" before

summary() {
  python3 - "$work" "$1" <<'PY'
import json, statistics, sys
work, name = sys.argv[1], sys.argv[2]
one = [tuple(map(float, l.split())) for l in open(f"{work}/{name}.one")]
tune = [tuple(map(float, l.split())) for l in open(f"{work}/{name}.tune")]
med = lambda xs: statistics.median(xs)
wall_ratio = med([t[0] / o[0] for o, t in zip(one, tune)])
cpu_ratio = med([t[1] / o[1] for o, t in zip(one, tune)])
d = json.load(open(f"{work}/{name}.json"))
t = d["tune"]
search = t["capacity_search_replays"] if t.get("smallest_capacity_bytes") is not None else "not searched"
print(f"| {name} | {len(one)} | {med([o[0] for o in one]):.2f} | {med([x[0] for x in tune]):.2f} | {wall_ratio:.1f} | "
      f"{med([o[1] for o in one]):.2f} | {med([x[1] for x in tune]):.2f} | {cpu_ratio:.1f} | {t['grid_points']} | {search} |")
PY
}

{
  echo "# reuse-sim tune speed, $(date +%F)"
  echo
  echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores visible, $(uname -sr); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- binaries: after: $bin; before: ${before:-(none)}"
  echo "- command: bench/tune-speed.sh $build ${before} (RUNS=$runs RUNS_BEFORE=$runs_before)"
  echo "- trace: random_trace of bench/reuse-sim.sh, 1000000 events, 4 streams, sizes 1 KiB..64 MiB; --capacity $capacity"
  echo "- one replay: \`reuse-sim replay --trace T --strategy torch-caching --capacity $capacity --json\`; tune: \`reuse-sim tune --trace T --capacity $capacity --json\`"
  echo "- ratio: --tune / one replay, per run (the two back to back), median over the runs; CPU: user + system seconds"
  echo
  echo "| binary | runs | one replay (s) | --tune (s) | ratio (wall) | one replay (CPU s) | --tune (CPU s) | ratio (CPU) | settings | capacity search replays |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  [ -n "$before" ] && summary before
  summary after
  echo
  echo "Answer (after): $(python3 -c "import json; print(json.load(open('$work/after.json'))['tune']['answer'])")"
} >"$out"
cat "$out"
