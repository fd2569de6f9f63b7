#!/usr/bin/env bash
# Is gpumem check's verdict stable on a healthy GPU? N back-to-back runs of
# `gpumem check` (a fleet would drain on any of them): each run's verdict
# and exit status, whether all agree, and every check whose verdict changed
# from one run to another (with the reasons it gave), plus the clock event
# reasons NVML reported in each run. Self-contained: needs only gpumem,
# python3 and nvidia-smi. Runs on the GPU machine:
#   bash bench/check-stability.sh DIR [RUNS] [LEVEL]
#   (DIR holds gpumem; RUNS default 10; LEVEL default standard)
# Writes markdown to stdout, and to $OUT/check-stability.md when $OUT is set.
# Exits 0 when every run gave the same verdict, 1 when they differ.
set -eu
dir=${1:?usage: check-stability.sh DIR [RUNS] [LEVEL]}
runs=${2:-10}
level=${3:-standard}
gpumem=$dir/gpumem
[ -x "$gpumem" ] || { echo "missing $gpumem" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
devices=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd, - || echo unknown)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null | head -n 1 || echo unknown)

for n in $(seq "$runs"); do
  status=0
  start=$(date +%s.%N)
  "$gpumem" check --level "$level" --json >"$work/$n.json" 2>"$work/$n.err" || status=$?
  end=$(date +%s.%N)
  echo "$status" >"$work/$n.status"
  awk "BEGIN{printf \"%.2f\", $end - $start}" >"$work/$n.wall"
done

report() {
  python3 - "$work" "$runs" <<'PY'
import json, sys, collections
work, runs = sys.argv[1], int(sys.argv[2])
docs, verdicts = [], []
print("| run | exit | wall s | verdict | pass | warn | fail | n/a | unknown | worst remediation | clock event reasons (GPU 0) |")
print("| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for n in range(1, runs + 1):
    status = open(f"{work}/{n}.status").read().strip()
    wall = open(f"{work}/{n}.wall").read().strip()
    try:
        doc = json.load(open(f"{work}/{n}.json"))
    except ValueError:
        doc = None
    docs.append(doc)
    if doc is None:
        verdicts.append("no document")
        print(f"| {n} | {status} | {wall} | no document | | | | | | | |")
        continue
    verdicts.append(doc.get("verdict"))
    counts = collections.Counter(c["verdict"] for c in doc["checks"])
    remedies = [d.get("remediation", "none") for d in doc["devices"]]
    order = ["none", "drain", "reset-gpu", "reboot", "service"]
    worst = max(remedies, key=lambda r: order.index(r) if r in order else 0) if remedies else "none"
    clocks = next((c["reason"] for c in doc["checks"] if c["check"] == "nvml.clock_event_reasons" and c["index"] == 0), "-")
    clocks = clocks.split("active: ", 1)[-1].replace("|", "/")
    print(f"| {n} | {status} | {wall} | {doc.get('verdict')} | {counts['pass']} | {counts['warn']} | {counts['fail']} | "
          f"{counts['n/a']} | {counts['unknown']} | {worst} | {clocks} |")
print()
agree = len(set(verdicts)) == 1
print(f"**All {runs} runs agree: {'yes' if agree else 'no'}** (verdicts: "
      + ", ".join(f"{v} x{k}" for v, k in collections.Counter(verdicts).items()) + ")")
print()
# Per check: the verdicts it took over the runs; a change is a flap.
per = collections.OrderedDict()
for n, doc in enumerate(docs, 1):
    if doc is None:
        continue
    for c in doc["checks"]:
        per.setdefault((c["index"], c["check"]), []).append((n, c["verdict"], c["reason"]))
flaps = [(k, v) for k, v in per.items() if len({x[1] for x in v}) > 1]
if not flaps:
    print(f"No check changed its verdict over the runs ({len(per)} checks per run).")
else:
    print(f"Checks whose verdict changed ({len(flaps)} of {len(per)}):")
    print()
    print("| GPU | check | verdicts by run | a reason of each verdict |")
    print("| ---: | --- | --- | --- |")
    for (index, check), v in flaps:
        seq = " ".join(x[1] for x in v)
        reasons = {}
        for _, verdict, reason in v:
            reasons.setdefault(verdict, reason.replace("|", "/"))
        print(f"| {index} | {check} | {seq} | " + "; ".join(f"{k}: {r}" for k, r in reasons.items()) + " |")
sys.exit(0 if agree else 1)
PY
}

{
  echo "# gpumem check stability: $runs back-to-back runs at level $level"
  echo
  echo "Date $(date -u +%Y-%m-%dT%H:%MZ); host $(hostname -s); devices: $devices; driver $driver; $("$gpumem" --version | head -n 1)."
  echo "Command: \`bash bench/check-stability.sh $dir $runs $level\` (each run: \`gpumem check --level $level --json\`)."
  echo
  status=0
  report || status=$?
  echo "$status" >"$work/agree"
} >"$work/report.md"
cat "$work/report.md"
if [ -n "${OUT:-}" ]; then cp "$work/report.md" "$OUT/check-stability.md"; fi
exit "$(cat "$work/agree")"
