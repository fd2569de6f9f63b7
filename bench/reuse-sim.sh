#!/usr/bin/env bash
# Benchmark of `gpumem reuse-sim`:
#  - events per second per strategy replaying a 10-million-event trace file
#    (the training workload saved with --save-trace: parsing included), and
#    straight from the workload generator; the replay's own clock (the JSON
#    "events_per_second"), median of 3 runs;
#  - peak resident memory for a 1- and a 10-million-event trace (it must not
#    grow with the trace: the trace is streamed);
#  - instructions per event under valgrind --tool=callgrind: the difference
#    between a 300k- and a 100k-event trace divided by the difference in
#    events, so start-up costs cancel and the figure is stable;
#  - the same on a random trace with 4 streams (issue 14: every strategy
#    >= 2 M events/s there), and the time of a trace with 10^6 streams.
# Writes bench/results/reuse-sim-DATE.md (or OUT) and prints it.
#   bench/reuse-sim.sh [BUILD_DIR [OUT]]     (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
bin=$build/gpumem
[ -x "$bin" ] || { echo "reuse-sim.sh: no $bin (build first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "reuse-sim.sh: needs python3" >&2; exit 2; }
# Every row of the strategy table, in its order: a new strategy is measured too.
strategies=$("$bin" --list strategies --format value | cut -f1 | tr '\n' ' ')
steps_10m=116300   # training workload: ~86 requests+frees per step -> 10.0 M events
steps_1m=11630
steps_small=1163   # ~100k events
steps_large=3489   # ~300k events
random_10m=10000000 random_1m=1000000 random_small=100000 random_large=300000
many_streams=1000000 many_streams_events=4000000
work=$(mktemp -d /tmp/gpumem-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT

# random_trace EVENTS STREAMS FILE: a deterministic random trace (seed 1).
# Sizes log-uniform from 1 KiB to 64 MiB; a free takes a random live
# allocation; the live count wanders between 1000 and 5000; ids come back
# most recently freed first, as a real allocator's addresses do. Up to 64
# streams are drawn at random per allocation; more are taken in turn (7919
# is prime to 10^6, so 10^6 allocations use every stream).
random_trace() {
  python3 - "$@" <<'PY'
import math, random, sys
events, streams, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(1)
rand, exp = rng.random, math.exp
lo, span = math.log(1024), math.log(64 << 20) - math.log(1024)
live, spare, out, next_id, allocs = [], [], [], 1, 0
with open(path, "w") as w:
    w.write("# gpumem-trace v2\naction,id,size,stream,tag\n")
    for _ in range(events):
        k = len(live)
        if k < 1000 or (k < 5000 and rand() < 0.5):
            s = allocs * 7919 % streams if streams > 64 else int(rand() * streams)
            if spare:
                a = spare.pop()
            else:
                a, next_id = next_id, next_id + 1
            out.append("alloc,%d,%d,%d,\n" % (a, int(exp(lo + rand() * span)), s))
            live.append(a)
            allocs += 1
        else:
            i = int(rand() * k)
            live[i], live[-1] = live[-1], live[i]
            a = live.pop()
            spare.append(a)
            out.append("free,%d,,,\n" % a)
        if len(out) >= 65536:
            w.write("".join(out))
            out.clear()
    w.write("".join(out))
PY
}

field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d['$1'])"; }
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

echo "generating traces..." >&2
for n in 10m:$steps_10m 1m:$steps_1m small:$steps_small large:$steps_large; do
  "$bin" reuse-sim replay --workload training --steps "${n#*:}" --strategy naive --no-chart --json \
    --save-trace "$work/${n%%:*}.csv" >/dev/null
done
for n in 10m:$random_10m 1m:$random_1m small:$random_small large:$random_large; do
  random_trace "${n#*:}" 4 "$work/random-${n%%:*}.csv"
done
random_trace $many_streams_events $many_streams "$work/many-streams.csv"
events_10m=$("$bin" reuse-sim replay --trace "$work/10m.csv" --strategy naive --json | field events)
events_small=$("$bin" reuse-sim replay --trace "$work/small.csv" --strategy naive --json | field events)
events_large=$("$bin" reuse-sim replay --trace "$work/large.csv" --strategy naive --json | field events)

rows="" random_rows=""
for s in $strategies; do
  echo "strategy $s..." >&2
  file_rates=() gen_rates=()
  for i in 1 2 3; do
    file_rates+=("$("$bin" reuse-sim replay --trace "$work/10m.csv" --strategy "$s" --json | field events_per_second)")
    gen_rates+=("$("$bin" reuse-sim replay --workload training --steps $steps_10m --strategy "$s" --json | field events_per_second)")
  done
  rss_10m=$( { /usr/bin/time -f '%M' "$bin" reuse-sim replay --trace "$work/10m.csv" --strategy "$s" --json >/dev/null; } 2>&1 | tail -n 1)
  rss_1m=$( { /usr/bin/time -f '%M' "$bin" reuse-sim replay --trace "$work/1m.csv" --strategy "$s" --json >/dev/null; } 2>&1 | tail -n 1)
  ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" reuse-sim "$@" --strategy "$s" --json 2>&1 >/dev/null |
      sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' | tail -n 1
  }
  ir_small=$(ir --trace "$work/small.csv")
  ir_large=$(ir --trace "$work/large.csv")
  per_event=$(python3 -c "print(round(($ir_large - $ir_small) / ($events_large - $events_small)))")
  # The generator emits one sync point per step besides the trace's events.
  gen_small=$(ir --workload training --steps $steps_small)
  gen_large=$(ir --workload training --steps $steps_large)
  gen_per_event=$(python3 -c "print(round(($gen_large - $gen_small) / ($events_large - $events_small + $steps_large - $steps_small)))")
  file_rate=$(median3 "${file_rates[@]}")
  gen_rate=$(median3 "${gen_rates[@]}")
  rows+=$(printf '| %s | %.2f | %.2f | %d | %d | %s | %s |' "$s" "$(python3 -c "print($file_rate/1e6)")" \
    "$(python3 -c "print($gen_rate/1e6)")" "$((rss_1m / 1024))" "$((rss_10m / 1024))" "$per_event" "$gen_per_event")$'\n'

  # The random trace with 4 streams, and the one with 10^6 streams.
  random_rates=()
  for i in 1 2 3; do
    random_rates+=("$("$bin" reuse-sim replay --trace "$work/random-10m.csv" --strategy "$s" --json | field events_per_second)")
  done
  random_rss_10m=$( { /usr/bin/time -f '%M' "$bin" reuse-sim replay --trace "$work/random-10m.csv" --strategy "$s" --json >/dev/null; } 2>&1 | tail -n 1)
  random_rss_1m=$( { /usr/bin/time -f '%M' "$bin" reuse-sim replay --trace "$work/random-1m.csv" --strategy "$s" --json >/dev/null; } 2>&1 | tail -n 1)
  random_ir=$(python3 -c "print(round(($(ir --trace "$work/random-large.csv") - $(ir --trace "$work/random-small.csv")) / ($random_large - $random_small)))")
  many=$( { /usr/bin/time -f '%e %M' "$bin" reuse-sim replay --trace "$work/many-streams.csv" --strategy "$s" --json >/dev/null; } 2>&1 | tail -n 1)
  random_rows+=$(printf '| %s | %.2f | %d | %d | %s | %s | %d |' "$s" "$(python3 -c "print($(median3 "${random_rates[@]}")/1e6)")" \
    "$((random_rss_1m / 1024))" "$((random_rss_10m / 1024))" "$random_ir" "${many% *}" "$((${many#* } / 1024))")$'\n'
done

out=${2:-bench/results/reuse-sim-$(date +%F).md}
{
  echo "# reuse-sim benchmark, $(date +%F)"
  echo
  echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores visible, $(uname -sr) (shared with other builds: figures vary by 10-20% run to run)"
  buildtype=$(python3 -c "import json; print([o['value'] for o in json.load(open('$build/meson-info/intro-buildoptions.json')) if o['name'] == 'buildtype'][0])" 2>/dev/null || echo unknown)
  echo "- binary: $bin ($buildtype build), $(c++ --version | head -n 1)"
  echo "- command: bench/reuse-sim.sh $build"
  echo "- trace: training workload (8 layers, batch 32), $steps_10m steps saved as a gpumem CSV trace: $events_10m events (allocs and frees)"
  echo "- events/s: the replay's own clock (JSON events_per_second), median of 3 runs; 'file' includes parsing the CSV, 'generator' replays the workload directly"
  echo "- RSS: peak resident set (/usr/bin/time %M) for the 1 M and 10 M event traces"
  echo "- Ir/event: valgrind --tool=callgrind, (Ir(300k-event trace) - Ir(100k-event trace)) / ($events_large - $events_small) events; 'file' parses the CSV (ring reads it twice: a first pass finds the largest request), 'generator' replays the workload (sync points counted as events)"
  echo "- targets: >= 10 M events/s for naive and grow-only, >= 2 M events/s for pool and torch-caching"
  echo
  echo "| strategy | M events/s (file) | M events/s (generator) | RSS 1M events (MiB) | RSS 10M events (MiB) | Ir/event (file) | Ir/event (generator) |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s' "$rows"
  echo
  echo "## Random trace, 4 streams"
  echo
  echo "- trace: $random_10m events (and the first $random_1m, from the same seed, for RSS), sizes log-uniform 1 KiB..64 MiB, random frees, 1000..5000 live, 4 streams at random (random_trace in this script)"
  echo "- 10^6 streams: $many_streams_events events taking $many_streams streams in turn; wall seconds and peak RSS of one run"
  echo "- Ir/event: callgrind, (Ir($random_large events) - Ir($random_small events)) / $((random_large - random_small))"
  echo "- targets (issue 14): >= 2 M events/s for every strategy, >= 10 M for naive and grow-only, RSS flat, 10^6 streams in seconds"
  echo
  echo "| strategy | M events/s | RSS 1M events (MiB) | RSS 10M events (MiB) | Ir/event | 10^6 streams (s) | 10^6 streams RSS (MiB) |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s' "$random_rows"
} >"$out"
cat "$out"
