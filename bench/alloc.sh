#!/usr/bin/env bash
# gpumem alloc-test benchmarks, on the GPU machine from the repository root:
#   bash bench/alloc.sh [DIR]     (DIR holds gpumem and bench/raw_alloc; default .device)
# 1. `alloc-test latency --api device` medians against a raw cudaMalloc/cudaFree
#    loop (bench/raw_alloc.cu) timed the same way, interleaved in the same run.
#    Target: gpumem's overhead <= 5% (sum of the alloc+free medians over sizes).
# 2. `alloc-test fill 90% --verify` throughput (bytes written + bytes read over
#    the pattern kernels' time) as a share of the peak memory bandwidth NVML
#    reports (max memory clock x bus width x 2). Target >= 80%.
# Markdown to stdout, and to $OUT/alloc-bench.md if $OUT is set.
set -eu
dir=${1:-.device}
gpumem=$dir/gpumem
raw=$dir/bench/raw_alloc
[ -x "$gpumem" ] && [ -x "$raw" ] || { echo "missing $gpumem or $raw (run tools/stage-device.sh build)" >&2; exit 2; }
sizes=4096,1048576,16777216,268435456,1073741824
sizes_text=4KiB,1MiB,16MiB,256MiB,1GiB
iterations=200
rounds=5
fill_rounds=3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
device=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -n 1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 | head -n 1)

for i in $(seq $rounds); do   # interleaved so drift hits both alike
  "$raw" $sizes $iterations 3 > "$work/raw-$i.json"
  "$gpumem" alloc-test latency -d 0 --api device --sizes $sizes_text --iterations $iterations --warmup 3 --no-sync-probe \
    --json > "$work/gpumem-$i.json"
done
for i in $(seq $fill_rounds); do
  "$gpumem" alloc-test fill 90% -d 0 --verify --json > "$work/fill-$i.json"
done

report=$(python3 - "$work" $rounds $fill_rounds <<'PY'
import json, statistics, sys
work, rounds, fill_rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
raw, gp = {}, {}
for i in range(1, rounds + 1):
    for p in json.load(open(f"{work}/raw-{i}.json"))["points"]:
        raw.setdefault(p["size"], {"alloc": [], "free": []})
        raw[p["size"]]["alloc"].append(p["alloc_median_us"]); raw[p["size"]]["free"].append(p["free_median_us"])
    for r in json.load(open(f"{work}/gpumem-{i}.json"))["latency"]:
        gp.setdefault(r["size"], {"alloc": [], "free": []})
        gp[r["size"]]["alloc"].append(r["alloc_p50_us"]); gp[r["size"]]["free"].append(r["free_p50_us"])
def human(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0: return f"{n // f} {unit}"
    return f"{n} B"
rows, sum_raw, sum_gp = [], 0.0, 0.0
for size in sorted(raw):
    ra, rf = statistics.median(raw[size]["alloc"]), statistics.median(raw[size]["free"])
    ga, gf = statistics.median(gp[size]["alloc"]), statistics.median(gp[size]["free"])
    sum_raw += ra + rf; sum_gp += ga + gf
    rows.append(f"| {human(size)} | {ra:.1f} | {ga:.1f} | {ga / ra:.3f} | {rf:.1f} | {gf:.1f} | {gf / rf:.3f} |")
overhead = sum_gp / sum_raw - 1
fills = [json.load(open(f"{work}/fill-{i}.json"))["fill"][0] for i in range(1, fill_rounds + 1)]
pct = statistics.median(f["pct_of_peak"] for f in fills if f["pct_of_peak"] is not None) if all(f["pct_of_peak"] is not None for f in fills) else None
gbps = statistics.median(f["gbps"] for f in fills)
f0 = fills[0]
print("## Allocation latency: gpumem vs raw cudaMalloc/cudaFree\n")
print("| size | raw alloc us | gpumem alloc us | ratio | raw free us | gpumem free us | ratio |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
print("\n".join(rows))
print(f"\nOverhead (sum of alloc+free medians over sizes, median of {rounds} interleaved rounds): "
      f"**{100 * overhead:+.1f}%** (target <= +5%: {'met' if overhead <= 0.05 else 'NOT met'})\n")
print("## fill 90% --verify\n")
print("| round | allocated | patterns | write GB/s | read GB/s | write+read GB/s | peak GB/s | % of peak | result |")
print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |")
for i, f in enumerate(fills, 1):
    peak = f"{f['peak_gbps']:.0f}" if f["peak_gbps"] is not None else "-"
    share = f"{f['pct_of_peak']:.1f}%" if f["pct_of_peak"] is not None else "-"
    print(f"| {i} | {f['allocated'] / 2**30:.1f} GiB | {f['patterns']} | {f['write_gbps']:.0f} | {f['read_gbps']:.0f} | "
          f"{f['gbps']:.0f} | {peak} | {share} | {f['result']} |")
if pct is None:
    print("\nPeak bandwidth unknown (NVML unavailable): no share of peak.")
else:
    print(f"\nMedian write+read throughput {gbps:.0f} GB/s = **{pct:.1f}% of peak** (target >= 80%: {'met' if pct >= 80 else 'NOT met'})")
PY
)
report="# alloc-test benchmark

- date: $(date -u +%Y-%m-%dT%H:%MZ)
- device: $device (driver $driver)
- latency commands (interleaved, $rounds rounds; medians of rounds): \`$raw $sizes $iterations 3\` and \`$gpumem alloc-test latency -d 0 --api device --sizes $sizes_text --iterations $iterations --warmup 3 --no-sync-probe --json\`
- fill command ($fill_rounds rounds): \`$gpumem alloc-test fill 90% -d 0 --verify --json\` (all five patterns, each written then read back; GB/s = 1e9 bytes/s, bytes written plus bytes read over the kernels' time from CUDA events)

$report"
echo "$report"
[ -n "${OUT:-}" ] && echo "$report" > "$OUT/alloc-bench.md"
exit 0
