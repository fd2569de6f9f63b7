#!/usr/bin/env bash
# gpumem check beside other processes (issue 26 §4), on the GPU machine:
#   1. two checks on one GPU at once, RUNS times in a row: each pair's exit
#      statuses, the verdicts of every check, which of the two waited for the
#      per-GPU lock and how long; any fail or a remediation beyond unknown's
#      is a false failure;
#   2. memory held by another process (alloc-test hold 97% of free): every
#      device check's verdict (unknown or pass, never fail), and
#      nvml.memory.in_use naming the holder's pid.
#   bash bench/check-contention.sh DIR [RUNS]   (DIR holds gpumem; RUNS default 10)
# Writes markdown to stdout, and to $OUT/check-contention.md when $OUT is set.
# Exits 0 when no check failed in (1) and no device check failed in (2).
set -eu
dir=${1:?usage: check-contention.sh DIR [RUNS]}
runs=${2:-10}
gpumem=$dir/gpumem
[ -x "$gpumem" ] || { echo "missing $gpumem" >&2; exit 2; }
work=$(mktemp -d)
hold_pid=
trap '[ -n "$hold_pid" ] && kill "$hold_pid" 2>/dev/null; rm -rf "$work"' EXIT
devices=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd, - || echo unknown)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null | head -n 1 || echo unknown)

for n in $(seq "$runs"); do
  sa=0 sb=0
  start=$(date +%s.%N)
  "$gpumem" check -d 0 --json >"$work/$n.a.json" 2>"$work/$n.a.err" & pa=$!
  "$gpumem" check -d 0 --json >"$work/$n.b.json" 2>"$work/$n.b.err" & pb=$!
  wait "$pa" || sa=$?
  wait "$pb" || sb=$?
  end=$(date +%s.%N)
  echo "$sa $sb" >"$work/$n.status"
  awk "BEGIN{printf \"%.2f\", $end - $start}" >"$work/$n.wall"
done

# (2) memory held by another process.
"$gpumem" alloc-test hold 97% --duration 120s >"$work/hold.out" 2>"$work/hold.err" & hold_pid=$!
for _ in $(seq 600); do grep -q . "$work/hold.out" 2>/dev/null && break; sleep 0.1; done
held_status=0
"$gpumem" check -d 0 --json >"$work/held.json" 2>"$work/held.err" || held_status=$?
kill -TERM "$hold_pid" 2>/dev/null || true
wait "$hold_pid" 2>/dev/null || true
echo "$held_status" >"$work/held.status"
echo "$hold_pid" >"$work/held.pid"
hold_pid=

python3 - "$work" "$runs" "$devices" "$driver" "$gpumem" <<'PY'
import json, os, sys
work, runs, devices, driver, gpumem = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
out = []
p = out.append
p(f"# gpumem check beside other processes: {devices}, driver {driver}\n")
p(f"`bash bench/check-contention.sh DIR {runs}`: two `{os.path.basename(gpumem)} check -d 0 --json` at once, {runs} times, then one check while `alloc-test hold 97%` holds the memory.\n")
p("## Two checks at once\n")
p("| pair | exit a, b | wall s | verdicts a | verdicts b | waited for the lock | not pass (check: verdict) |")
p("| --- | --- | --- | --- | --- | --- | --- |")
false_failures = 0
def load(path):
    try:
        with open(path) as f: return json.load(f)
    except Exception as e:
        return {"checks": [], "verdict": f"unreadable ({e})"}
for n in range(1, runs + 1):
    sa, sb = open(f"{work}/{n}.status").read().split()
    wall = open(f"{work}/{n}.wall").read()
    docs = [load(f"{work}/{n}.{x}.json") for x in "ab"]
    waited, odd = [], []
    for name, d in zip("ab", docs):
        for c in d.get("checks", []):
            if c["check"] == "cuda.context" and "for the GPU's lock" in c.get("reason", ""):
                waited.append(name + ": " + c["reason"].split("; ")[-1][:90])
            if c["verdict"] not in ("pass", "n/a"):
                odd.append(f"{name} {c['check']}: {c['verdict']}")
            if c["verdict"] == "fail" or (c["verdict"] == "unknown" and c.get("remediation") not in (None, "none")):
                false_failures += 1
    p(f"| {n} | {sa}, {sb} | {wall} | {docs[0].get('verdict')} | {docs[1].get('verdict')} | {'; '.join(waited) or '-'} | {'; '.join(odd) or '-'} |")
p(f"\nFalse failures (a fail, or an unknown with a remediation): {false_failures}\n")
p("## Memory held by another process\n")
held = load(f"{work}/held.json")
pid = open(f"{work}/held.pid").read().strip()
p(f"`alloc-test hold 97%` (pid {pid}); check exit {open(f'{work}/held.status').read().strip()}, verdict {held.get('verdict')}\n")
p("| check | verdict | remediation | reason |")
p("| --- | --- | --- | --- |")
device_fail = 0
device_work = {"cuda.context", "memset.bandwidth", "copy.d2d", "copy.h2d", "copy.d2h", "alloc.max", "fill.verify"}
for c in held.get("checks", []):
    if c.get("index") != 0: continue
    if c["check"] in device_work and c["verdict"] == "fail": device_fail += 1
    reason = c.get("reason", "").replace("|", "/")[:220]
    p(f"| {c['check']} | {c['verdict']} | {c.get('remediation')} | {reason} |")
in_use = [c for c in held.get("checks", []) if c["check"] == "nvml.memory.in_use"]
p(f"\nDevice checks failed: {device_fail}; nvml.memory.in_use names pid {pid}: {bool(in_use) and ('pid ' + pid) in in_use[0].get('reason', '')}\n")
text = "\n".join(out) + "\n"
sys.stdout.write(text)
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "check-contention.md"), "w") as f: f.write(text)
sys.exit(0 if false_failures == 0 and device_fail == 0 else 1)
PY
