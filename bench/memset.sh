#!/usr/bin/env bash
# gpumem memset vs a raw cudaMemsetAsync loop timed the same way, in the same
# run, and the share of the GPU's peak memory bandwidth (NVML: max memory
# clock x bus width x 2). Runs on the GPU machine from the repository root:
#   bash bench/memset.sh [DIR]     (DIR holds gpumem and bench/raw_memset; default .device)
# Writes a markdown report to stdout and to $OUT/memset-bench.md if $OUT is set.
set -eu
dir=${1:-.device}
gpumem=$dir/gpumem
raw=$dir/bench/raw_memset
[ -x "$gpumem" ] && [ -x "$raw" ] || { echo "missing $gpumem or $raw (run tools/stage-device.sh build)" >&2; exit 2; }
size=$((1 << 30))
rounds=5
device=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -n 1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 | head -n 1)
peak=$("$gpumem" info -d 0 --query peak_memory_bandwidth --format value)   # GB/s

gp=() rw=() gp32=()
for i in $(seq $rounds); do   # interleaved so drift hits both alike
  rw+=("$("$raw" $size 20 5 | python3 -c 'import json,sys; print(json.load(sys.stdin)["bandwidth_gbps"])')")
  gp+=("$("$gpumem" memset -d 0 --size $size --iterations 20 --samples 5 --json \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["results"][0]["bandwidth_gbps"], 2))')")
  gp32+=("$("$gpumem" memset -d 0 --size $size --width 32 --value 0xdeadbeef --iterations 20 --samples 5 --json \
        | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["results"][0]["bandwidth_gbps"], 2))')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
m_raw=$(median "${rw[@]}"); m_gp=$(median "${gp[@]}"); m_gp32=$(median "${gp32[@]}")
report=$(cat <<MD
# memset benchmark

- date: $(date -u +%Y-%m-%dT%H:%MZ)
- device: $device (driver $driver)
- buffer: 1 GiB, 20 memsets per sample behind a spin kernel, median of 5 samples; $rounds interleaved rounds, median of rounds
- commands: \`$raw $size 20 5\` and \`$gpumem memset -d 0 --size $size --iterations 20 --samples 5 --json\` (and \`--width 32 --value 0xdeadbeef\`)
- peak memory bandwidth (NVML max memory clock x bus width x 2): $peak GB/s

| what | GB/s (median of rounds) | vs raw | of peak |
| --- | ---: | ---: | ---: |
| raw cudaMemsetAsync | $m_raw | 1.000 | $(awk "BEGIN{printf \"%.1f%%\", 100*$m_raw/$peak}") |
| gpumem memset --width 8 | $m_gp | $(awk "BEGIN{printf \"%.3f\", $m_gp/$m_raw}") | $(awk "BEGIN{printf \"%.1f%%\", 100*$m_gp/$peak}") |
| gpumem memset --width 32 | $m_gp32 | $(awk "BEGIN{printf \"%.3f\", $m_gp32/$m_raw}") | $(awk "BEGIN{printf \"%.1f%%\", 100*$m_gp32/$peak}") |

Rounds (GB/s): raw ${rw[*]}; gpumem ${gp[*]}; gpumem width 32 ${gp32[*]}
MD
)
echo "$report"
[ -n "${OUT:-}" ] && echo "$report" > "$OUT/memset-bench.md"
exit 0
