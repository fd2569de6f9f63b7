#!/usr/bin/env bash
# What reuse-sim's timeline costs the replay (issue 46: --plot keeps one; a
# table on a terminal always did, for its chart). A 1-million-event training
# workload, every strategy, replayed with no timeline (--json alone) and with
# one (--json --plot): the replay's own events per second (the JSON
# "events_per_second"), median of RUNS runs each, as a ratio against the run
# without a timeline in the same binary. Given a second binary (BEFORE, the
# timeline as it was: maxima only, kept for --timeline), it is measured the
# same way with --timeline, so the two ratios compare the timelines.
#   bench/timeline-speed.sh [AFTER_BIN [BEFORE_BIN]]     (default build/gpumem; RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
after=${1:-build/gpumem}
before=${2:-}
runs=${RUNS:-5}
steps=${STEPS:-11630}  # training workload: ~86 events a step -> 1.0 M events
work=$(mktemp -d /tmp/gpumem-timeline-XXXXXX)
trap 'rm -rf "$work"' EXIT

rate() {  # BIN ARGS...: median events per second of RUNS replays
    local bin=$1; shift
    for _ in $(seq "$runs"); do
        "$bin" reuse-sim replay --workload training --steps "$steps" --json "$@" |
            python3 -c 'import json, sys; print(json.load(sys.stdin)["events_per_second"])'
    done | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

measure() {  # NAME BIN TIMELINE_ARGS...
    local name=$1 bin=$2; shift 2
    local without with
    without=$(rate "$bin")
    with=$(rate "$bin" "$@")
    awk -v n="$name" -v a="$without" -v b="$with" \
        'BEGIN { printf "| %s | %.3g | %.3g | %.3f |\n", n, a, b, b / a }'
}

echo "| binary | events/s, no timeline | events/s, with timeline | ratio |"
echo "| --- | ---: | ---: | ---: |"
measure "after ($after, --plot)" "$after" --plot "$work/p.svg"
[ -n "$before" ] && measure "before ($before, --timeline)" "$before" --timeline "$work/t.csv"
exit 0
