#!/usr/bin/env bash
# gpumem copy against a raw cudaMemcpyAsync loop timed the nvbandwidth way
# (bench/raw_copy.cu), in the same run, for h2d, d2h, bidir and d2d at 512 MiB;
# the PCIe link's theoretical rate (generation and width from NVML through
# `gpumem info`); the wall time of 4KiB..1GiB sweeps; the wall time and cv of
# a default `gpumem copy h2d` process. Runs on the GPU machine from the
# repository root:
#   bash bench/copy.sh [DIR]     (DIR holds gpumem and bench/raw_copy; default .device)
# Without DIR/bench/raw_copy it builds the baseline with nvcc (sm_90).
# Writes a markdown report to stdout and to $OUT/copy-bench.md if $OUT is set.
set -eu
dir=${1:-.device}
gpumem=$dir/gpumem
raw=$dir/bench/raw_copy
[ -x "$gpumem" ] || { echo "missing $gpumem (run tools/stage-device.sh build)" >&2; exit 2; }
raw_note="prebuilt $raw (meson, static cudart)"
if [ ! -x "$raw" ]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  tmp=$(mktemp -d)
  raw=$tmp/raw_copy
  "$nvcc" -O2 -std=c++17 -cudart static -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -o "$raw" bench/raw_copy.cu
  raw_note="built here: nvcc -O2 -cudart static -gencode arch=compute_90,code=sm_90 bench/raw_copy.cu"
fi

size=$((512 << 20))
rounds=3
device=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -n 1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 | head -n 1)

json_get() {  # json_get EXPR: evaluates EXPR on the JSON document `d` read from stdin
  python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
maximum() { printf '%s\n' "$@" | sort -g | tail -n 1; }
ratio() { awk "BEGIN{printf \"%.3f\", $1/$2}"; }
check() { awk "BEGIN{exit !($1)}" && echo PASS || echo MISS; }
now() { date +%s.%N; }

# PCIe link: the current link of an idle GPU may have trained down to save
# power, so the theoretical rate uses the maximum generation and width.
IFS=, read -r gen width gen_max width_max < <("$gpumem" info -d 0 --query pcie_gen,pcie_width,pcie_gen_max,pcie_width_max \
  --csv --no-header | tr -d ' ')
pcie_rate() {  # GB/s per direction, raw (before packet overheads): GT/s x encoding x lanes / 8
  awk -v g="$1" -v w="$2" 'BEGIN{
    split("2.5 5 8 16 32 64", gts, " ");
    enc = (g <= 2) ? 8/10 : (g <= 5 ? 128/130 : 242/256);
    if (g < 1 || g > 6 || w < 1) { print "?"; exit }
    printf "%.1f", gts[g] * enc * w / 8 }'
}
theory=$(pcie_rate "${gen_max:-0}" "${width_max:-0}")

# Interleaved rounds, so drift hits both alike.
declare -a r_h2d r_d2h r_bh r_bd r_d2d g_h2d g_d2h g_bh g_bd g_d2d
for i in $(seq $rounds); do
  out=$("$raw" $size 16 7)
  r_h2d+=("$(json_get 'd["h2d_gbps"]' <<<"$out")")
  r_d2h+=("$(json_get 'd["d2h_gbps"]' <<<"$out")")
  r_bh+=("$(json_get 'd["bidir_h2d_gbps"]' <<<"$out")")
  r_bd+=("$(json_get 'd["bidir_d2h_gbps"]' <<<"$out")")
  r_d2d+=("$(json_get 'd["d2d_gbps"]' <<<"$out")")
  g_h2d+=("$("$gpumem" copy h2d -d 0 --size $size --json | json_get 'd["results"][0]["median_gbps"]')")
  g_d2h+=("$("$gpumem" copy d2h -d 0 --size $size --json | json_get 'd["results"][0]["median_gbps"]')")
  out=$("$gpumem" copy bidir -d 0 --size $size --json)
  g_bh+=("$(json_get 'd["results"][0]["median_gbps"]' <<<"$out")")
  g_bd+=("$(json_get 'd["results"][1]["median_gbps"]' <<<"$out")")
  g_d2d+=("$("$gpumem" copy d2d -d 0 --size $size --json | json_get 'd["results"][0]["median_gbps"]')")
done
row() {  # name, raw values..., --, gpumem values...
  local name=$1; shift
  local -a rv=() gv=(); while [ "$1" != -- ]; do rv+=("$1"); shift; done; shift; gv=("$@")
  local mr mg; mr=$(median "${rv[@]}"); mg=$(median "${gv[@]}")
  echo "| $name | $mr | $mg | $(ratio "$mg" "$mr") | $(check "$mg / $mr >= 0.99") |"
}
m_h2d=$(median "${g_h2d[@]}"); m_d2h=$(median "${g_d2h[@]}")

# Sweeps: whole processes, as a user runs them.
t0=$(now); "$gpumem" copy h2d -d 0 --sizes 4KiB..1GiB -q >/dev/null; t1=$(now)
"$gpumem" copy d2h -d 0 --sizes 4KiB..1GiB -q >/dev/null; t2=$(now)
sweep_h2d=$(awk "BEGIN{printf \"%.2f\", $t1-$t0}"); sweep_d2h=$(awk "BEGIN{printf \"%.2f\", $t2-$t1}")
sweep_total=$(awk "BEGIN{printf \"%.2f\", $t2-$t0}")

# The default quick check, ten times.
declare -a walls cvs bws
for i in $(seq 10); do
  t0=$(now); out=$("$gpumem" copy h2d --json); t1=$(now)
  walls+=("$(awk "BEGIN{printf \"%.3f\", $t1-$t0}")")
  cvs+=("$(json_get 'd["results"][0]["cv_percent"]' <<<"$out")")
  bws+=("$(json_get 'd["results"][0]["median_gbps"]' <<<"$out")")
done
default_bytes=$("$gpumem" copy h2d --json | json_get 'd["results"][0]["bytes"]')
m_wall=$(median "${walls[@]}"); x_wall=$(maximum "${walls[@]}")
m_cv=$(median "${cvs[@]}"); x_cv=$(maximum "${cvs[@]}"); m_bw=$(median "${bws[@]}")

# For information: other host memory kinds and the SM engine, 512 MiB, one run each.
info_row() {  # label, gpumem args...
  local label=$1; shift
  local out; out=$("$gpumem" copy "$@" -d 0 --size $size --json)
  echo "| $label | $(json_get 'd["results"][0]["median_gbps"]' <<<"$out") | $(json_get 'd["results"][0]["cv_percent"]' <<<"$out") | $(json_get 'd["results"][0]["timing"]' <<<"$out") |"
}
extra=$(
  info_row "h2d pageable" h2d --host-memory pageable
  info_row "d2h pageable" d2h --host-memory pageable
  info_row "h2d write-combined" h2d --host-memory write-combined
  info_row "h2d registered" h2d --host-memory registered
  info_row "h2d sm engine (nvbandwidth h2d_sm: 51.4 on H200)" h2d --engine sm
  info_row "d2h sm engine (nvbandwidth d2h_sm: 52.6 on H200)" d2h --engine sm
)

report=$(cat <<MD
# copy benchmark

- date: $(date -u +%Y-%m-%dT%H:%MZ)
- device: $device (driver $driver); PCIe link now Gen$gen x$width, maximum Gen$gen_max x$width_max
- PCIe theoretical rate per direction (maximum link, GT/s x encoding x lanes / 8, before packet overheads): $theory GB/s
- baseline: \`$raw $size 16 7\`: cudaMemcpyAsync, pinned memory, spin kernel holding the stream, 4 warm-up copies, events around 16 copies, median of 7 samples ($raw_note)
- gpumem: \`$gpumem copy DIR -d 0 --size $size --json\` at its default timing (2 warm-up copies, copies per sample filling ~10 ms, median of 5 samples)
- $rounds interleaved rounds; each figure is the median of the rounds, GB/s = 1e9 bytes/s

| direction | raw GB/s | gpumem GB/s | gpumem / raw | >= 0.99 |
| --- | ---: | ---: | ---: | --- |
$(row h2d "${r_h2d[@]}" -- "${g_h2d[@]}")
$(row d2h "${r_d2h[@]}" -- "${g_d2h[@]}")
$(row "bidir h2d" "${r_bh[@]}" -- "${g_bh[@]}")
$(row "bidir d2h" "${r_bd[@]}" -- "${g_bd[@]}")
$(row "d2d (bytes counted once)" "${r_d2d[@]}" -- "${g_d2d[@]}")

| target | measured | result |
| --- | --- | --- |
| pinned h2d >= 54 GB/s | $m_h2d GB/s ($(awk "BEGIN{printf \"%.1f%%\", 100*$m_h2d/$theory}" 2>/dev/null || echo ?) of theoretical) | $(check "$m_h2d >= 54") |
| pinned d2h >= 54 GB/s | $m_d2h GB/s ($(awk "BEGIN{printf \"%.1f%%\", 100*$m_d2h/$theory}" 2>/dev/null || echo ?) of theoretical) | $(check "$m_d2h >= 54") |
| sweeps 4KiB..1GiB of h2d and d2h < 5 s wall | h2d $sweep_h2d s + d2h $sweep_d2h s = $sweep_total s | $(check "$sweep_total < 5") |
| default \`gpumem copy h2d\` < 0.6 s wall (median of 10) | median $m_wall s, max $x_wall s | $(check "$m_wall < 0.6") |
| default run cv <= 1% | median $m_cv %, max $x_cv % | $(check "$x_cv <= 1") |

The default run copies $default_bytes bytes; its median bandwidth over the 10 runs is $m_bw GB/s
($(ratio "$m_bw" "$(median "${r_h2d[@]}")") of the raw 512 MiB figure).

Rounds (GB/s): raw h2d ${r_h2d[*]}; gpumem h2d ${g_h2d[*]}; raw d2h ${r_d2h[*]}; gpumem d2h ${g_d2h[*]};
raw bidir ${r_bh[*]} / ${r_bd[*]}; gpumem bidir ${g_bh[*]} / ${g_bd[*]}; raw d2d ${r_d2d[*]}; gpumem d2d ${g_d2d[*]}.
Default runs: wall (s) ${walls[*]}; cv (%) ${cvs[*]}.

For information (gpumem only, 512 MiB, one run each):

| copy | GB/s | cv % | timing |
| --- | ---: | ---: | --- |
$extra
MD
)
echo "$report"
[ -n "${OUT:-}" ] && echo "$report" > "$OUT/copy-bench.md"
exit 0
