#!/usr/bin/env bash
# Where the time of `check -d all` goes on a node of several GPUs (issue 38,
# part 1), on the GPU machine after tools/stage-device.sh:
#   - the topology (nvidia-smi topo -m) and the CPUs;
#   - `check -d all` (standard) RUNS times, each document kept;
#   - `check -d N` alone for every GPU, the reference figures;
#   - host copies of every GPU alone, then of all GPUs at once (one process
#     each), to see whether their links are shared.
# Prints a table per check: seconds and value, all-GPUs run beside alone.
#   OUT=dir bash bench/check-node.sh [RUNS]   (PAIRS: how many two-checks-at-once cases, default 3)
set -u
runs=${1:-3}
OUT=${OUT:-/tmp/gpumem-out}; mkdir -p "$OUT"
g=.device/gpumem
n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader > "$OUT/gpus.txt"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
lscpu | grep -E 'Model name|^CPU\(s\)|NUMA' >> "$OUT/topo.txt"
for i in $(seq "$runs"); do
  s=$(date +%s.%N); "$g" check -d all --json > "$OUT/all.$i.json" 2> "$OUT/all.$i.err"; rc=$?
  echo "check -d all run $i: exit $rc, $(python3 -c "print(round($(date +%s.%N)-$s,2))") s wall"
done
for d in $(seq 0 $((n - 1))); do "$g" check -d "$d" --json > "$OUT/one.$d.json" 2>/dev/null; done
# Host links: alone, then every GPU at once in its own process.
for dir in h2d d2h; do
  for d in $(seq 0 $((n - 1))); do "$g" copy "$dir" -d "$d" -s 256MiB --json > "/tmp/alone.$dir.$d.json" 2>/dev/null; done
  for d in $(seq 0 $((n - 1))); do "$g" copy "$dir" -d "$d" -s 256MiB --json > "/tmp/together.$dir.$d.json" 2>/dev/null & done; wait
  for d in $(seq 0 $((n - 1))); do
    python3 - "$dir" "$d" <<'PY'
import json, sys
dir, d = sys.argv[1], sys.argv[2]
def bw(kind):
    try:
        doc = json.load(open(f"/tmp/{kind}.{dir}.{d}.json"))
        rows = [r for t in doc.get("results", doc.get("rows", [])) for r in ([t] if isinstance(t, dict) else [])]
        return max(r.get("median_gbps") or r.get("bandwidth_gbps") or 0 for r in rows) if rows else doc
    except Exception as e:
        return repr(e)
print(f"copy {dir} GPU {d}: alone {bw('alone')} GB/s, all GPUs at once {bw('together')} GB/s")
PY
  done
done | tee "$OUT/host-links.txt"
cp /tmp/alone.h2d.0.json "$OUT/copy-sample.json"
# Two checks on one GPU at once while every GPU checks: no false failure, the wait named.
for i in $(seq "${PAIRS:-3}"); do
  "$g" check -d all --json > "$OUT/pair-all.$i.json" 2>/dev/null & a=$!
  sleep 0.3; "$g" check -d 0 --json > "$OUT/pair-one.$i.json" 2>/dev/null; rb=$?
  wait $a; ra=$?
  python3 - "$OUT/pair-all.$i.json" "$OUT/pair-one.$i.json" "$ra" "$rb" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = [(d["index"], c["check"], c["verdict"]) for d in (a, b) for c in d["checks"] if c["verdict"] == "fail"]
waits = [c["reason"][c["reason"].find("waited"):][:90] for d in (a, b) for c in d["checks"] if c["check"] == "cuda.context" and "waited" in c["reason"]]
print(f"two checks at once: exit {sys.argv[3]} and {sys.argv[4]}, verdicts {a['verdict']} and {b['verdict']}, {round(a['seconds'],2)} s and {round(b['seconds'],2)} s, failed checks {bad or 'none'}; {waits}")
PY
done | tee "$OUT/pairs.txt"
python3 - "$OUT" "$runs" "$n" <<'PY' | tee "$OUT/profile.md"
import json, sys, statistics
out, runs, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
alls = [json.load(open(f"{out}/all.{i}.json")) for i in range(1, runs + 1)]
ones = [json.load(open(f"{out}/one.{d}.json")) for d in range(n)]
print("check -d all wall (document seconds):", [round(a["seconds"], 2) for a in alls], "verdicts:", [a["verdict"] for a in alls])
print("check -d N alone seconds:", [round(o["seconds"], 2) for o in ones])
print()
print("| check | GPU | alone s | alone value | all: s (per run) | all: value (per run) |")
print("| --- | --- | ---: | ---: | --- | --- |")
def key(c): return (c["index"], c["check"])
alone = {key(c): c for o in ones for c in o["checks"]}
for c in alls[0]["checks"]:
    if c["seconds"] is None or (c["seconds"] < 0.05 and not c["check"].startswith(("copy", "memset", "fill", "p2p"))): continue
    k = key(c); a = alone.get(k)
    same = [next((x for x in r["checks"] if key(x) == k), None) for r in alls]
    fmt = lambda v: "-" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))
    print(f"| {c['check']} | {c['index']} | {fmt(a['seconds']) if a else '-'} | {fmt(a['value']) if a else '-'} | "
          f"{', '.join(fmt(x['seconds']) for x in same if x)} | {', '.join(fmt(x['value']) for x in same if x)} |")
import re
def fill_rate(c):
    m = re.search(r"written and read back at ([0-9.]+) GB/s", c["reason"])
    return float(m.group(1)) if m else None
print()
print("Figures of each GPU in check -d all (median of the runs) against a check of that GPU alone:")
worst = 0.0
for d in range(n):
    for check in ("memset.bandwidth", "copy.d2d", "copy.h2d", "copy.d2h", "fill.verify"):
        get = (lambda c: fill_rate(c)) if check == "fill.verify" else (lambda c: c["value"])
        a = next((get(c) for c in ones[d]["checks"] if c["check"] == check and c["index"] == d), None)
        vals = [get(c) for r in alls for c in r["checks"] if c["check"] == check and c["index"] == d]
        vals = [v for v in vals if v is not None]
        if a is None or not vals: continue
        med = statistics.median(vals); dev = (med - a) / a * 100; worst = max(worst, abs(dev))
        print(f"GPU {d} {check}: alone {a:.1f}, all {med:.1f} (runs {min(vals):.1f}..{max(vals):.1f}), {dev:+.2f}%")
print(f"largest deviation of a median: {worst:.2f}%")
walls = sorted(a["seconds"] for a in alls)
print(f"check -d all: median {statistics.median(walls):.2f} s, max {walls[-1]:.2f} s over {len(walls)} runs; verdicts {sorted(set(a['verdict'] for a in alls))}")
PY
