#!/usr/bin/env bash
# gpumem check timed as a whole process (what a Slurm prolog pays) at each
# level: the median and the maximum wall time of N runs, the verdicts, and
# for the standard level each check's value, threshold and time on device 0
# (medians over the runs). dcgmi diag -r 1 and -r 2 are timed beside it when
# the machine has DCGM. Runs on the GPU machine from the repository root:
#   bash bench/check.sh [DIR] [RUNS]   (DIR holds gpumem; default .device; RUNS default 5)
# Writes a markdown report to stdout and to $OUT/check-bench.md if $OUT is set.
set -eu
dir=${1:-.device}
runs=${2:-5}
gpumem=$dir/gpumem
[ -x "$gpumem" ] || { echo "missing $gpumem (run tools/stage-device.sh build)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
devices=$(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *//' | paste -sd, -)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 | head -n 1)

# One run: its wall time, exit status and JSON document kept as $work/LEVEL.N.*
run() {
  local level=$1 n=$2 start end status=0
  start=$(date +%s.%N)
  "$gpumem" check --level "$level" --json >"$work/$level.$n.json" 2>"$work/$level.$n.err" || status=$?
  end=$(date +%s.%N)
  echo "$status" >"$work/$level.$n.status"
  awk "BEGIN{printf \"%.3f\", $end - $start}" >"$work/$level.$n.wall"
}
for level in quick standard long; do
  for n in $(seq "$runs"); do run "$level" "$n"; done
done

summary() {  # a markdown row per level
  python3 - "$work" "$runs" <<'PY'
import json, statistics, sys, collections
work, runs = sys.argv[1], int(sys.argv[2])
for level in ("quick", "standard", "long"):
    walls, statuses, verdicts, counts = [], collections.Counter(), collections.Counter(), collections.Counter()
    for n in range(1, runs + 1):
        walls.append(float(open(f"{work}/{level}.{n}.wall").read()))
        statuses[open(f"{work}/{level}.{n}.status").read().strip()] += 1
        try:
            doc = json.load(open(f"{work}/{level}.{n}.json"))
        except ValueError:
            verdicts["no document"] += 1
            continue
        verdicts[doc.get("verdict", "?")] += 1
        for c in doc.get("checks", []):
            counts[c["verdict"]] += 1
    per_run = ", ".join(f"{k} {v / runs:g}" for k, v in sorted(counts.items()))
    print(f"| {level} | {runs} | {statistics.median(walls):.3f} | {max(walls):.3f} | "
          f"{', '.join(f'{k} x{v}' for k, v in verdicts.items())} | {', '.join(f'{k} x{v}' for k, v in statuses.items())} | {per_run} |")
PY
}

checks() {  # standard level, device 0: a markdown row per check
  python3 - "$work" "$runs" <<'PY'
import json, statistics, sys, collections
work, runs = sys.argv[1], int(sys.argv[2])
rows = collections.OrderedDict()
for n in range(1, runs + 1):
    try:
        doc = json.load(open(f"{work}/standard.{n}.json"))
    except ValueError:
        continue
    for c in doc["checks"]:
        if c["index"] != 0:
            continue
        r = rows.setdefault(c["check"], {"values": [], "seconds": [], "verdicts": collections.Counter(), "c": c})
        if c["value"] is not None:
            r["values"].append(c["value"])
        r["seconds"].append(c["seconds"])
        r["verdicts"][c["verdict"]] += 1
for check, r in rows.items():
    c = r["c"]
    value = f"{statistics.median(r['values']):.6g}" if r["values"] else "-"
    threshold = f"{c['comparison']} {c['threshold']:.6g}" if c["threshold"] is not None else "-"
    verdicts = ", ".join(f"{k} x{v}" for k, v in r["verdicts"].items())
    reason = c["reason"].replace("|", "/")
    print(f"| {check} | {value} | {c['unit']} | {threshold} | {verdicts} | {statistics.median(r['seconds']):.3f} | {reason} |")
PY
}

dcgm="not installed on this machine (dcgmi not found): no comparison"
if command -v dcgmi >/dev/null; then
  dcgm=""
  for r in 1 2; do
    start=$(date +%s.%N)
    if dcgmi diag -r "$r" >"$work/dcgmi.$r" 2>&1; then st=0; else st=$?; fi
    end=$(date +%s.%N)
    dcgm+="dcgmi diag -r $r: $(awk "BEGIN{printf \"%.1f\", $end - $start}") s, exit $st; "
  done
fi

report=$(cat <<MD
# gpumem check benchmark

- date: $(date -u +%Y-%m-%dT%H:%MZ)
- devices: $devices (driver $driver)
- command: \`$gpumem check --level LEVEL --json\` (every device), $runs runs per level, wall time of the whole process
- dcgm: $dcgm

| level | runs | median wall s | max wall s | verdicts | exit statuses | checks per run |
| --- | ---: | ---: | ---: | --- | --- | --- |
$(summary)

Standard level, device 0 (medians over the runs; the reason of the first run):

| check | value | unit | threshold | verdicts | s | reason |
| --- | ---: | --- | ---: | --- | ---: | --- |
$(checks)
MD
)
echo "$report"
[ -n "${OUT:-}" ] && echo "$report" > "$OUT/check-bench.md"
exit 0
