#!/usr/bin/env bash
# Wall time of `gpumem info --query used --format value` against
# `nvidia-smi --query-gpu=memory.used --format=csv,noheader`: whole processes,
# interleaved, after warm-ups. Run from the repository root on a GPU machine:
#   bench/info.sh [GPUMEM_BINARY]        (default: .device/gpumem)
#   RUNS=50 WARMUP=5 bench/info.sh build/gpumem
# Prints a markdown table on stdout and also writes it to $OUT/info-bench.md
# when OUT is set. Times with python3's time.perf_counter, or with
# `date +%s%N` where python3 is missing.
set -eu

bin=${1:-.device/gpumem}
runs=${RUNS:-30}
warmup=${WARMUP:-3}

die() { echo "bench/info.sh: $*" >&2; exit 1; }

[ -f "$bin" ] || die "no gpumem binary at '$bin' (build it and run tools/stage-device.sh, or pass its path)"
[ -x "$bin" ] || die "'$bin' is not executable"
command -v nvidia-smi >/dev/null 2>&1 || die "nvidia-smi not found"
case $runs in ''|*[!0-9]*) die "RUNS must be a positive integer" ;; esac
case $warmup in ''|*[!0-9]*) die "WARMUP must be a non-negative integer" ;; esac
[ "$runs" -ge 1 ] || die "RUNS must be at least 1"

gpumem_cmd=("$bin" info --query used --format value)
smi_cmd=(nvidia-smi --query-gpu=memory.used --format=csv,noheader)

# Both must work before anything is timed.
"${gpumem_cmd[@]}" >/dev/null || die "'${gpumem_cmd[*]}' failed (exit $?)"
"${smi_cmd[@]}" >/dev/null || die "'${smi_cmd[*]}' failed (exit $?)"

device=$(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/\2 x\1/' | paste -sd ';' -)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)
version=$("$bin" --version | head -n 1)
when=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
host_cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)

samples=$(mktemp)
trap 'rm -f "$samples"' EXIT

if command -v python3 >/dev/null 2>&1; then
  timer="python3 time.perf_counter around subprocess.run"
  python3 - "$runs" "$warmup" "$samples" "${#gpumem_cmd[@]}" "${gpumem_cmd[@]}" "${smi_cmd[@]}" <<'PY'
import subprocess, sys, time
runs, warmup, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
n = int(sys.argv[4])
rest = sys.argv[5:]
commands = {"gpumem": rest[:n], "nvidia-smi": rest[n:]}
def once(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t1 = time.perf_counter()
    if r.returncode != 0:
        sys.exit("bench/info.sh: %s exited %d" % (" ".join(cmd), r.returncode))
    return (t1 - t0) * 1e3
for _ in range(warmup):
    for cmd in commands.values():
        once(cmd)
with open(out, "w") as f:
    for i in range(runs):
        # Interleaved, alternating which goes first.
        order = list(commands.items()) if i % 2 == 0 else list(reversed(list(commands.items())))
        for name, cmd in order:
            f.write("%s %.4f\n" % (name, once(cmd)))
PY
else
  timer="date +%s%N around each process"
  now_ns() { date +%s%N; }
  time_one() {  # name, command...
    local name=$1; shift
    local t0 t1
    t0=$(now_ns)
    "$@" >/dev/null 2>&1 </dev/null || die "'$*' failed"
    t1=$(now_ns)
    [ -n "$name" ] && awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.4f\n", n, (b - a) / 1e6 }' >>"$samples"
    return 0
  }
  for ((i = 0; i < warmup; i++)); do time_one "" "${gpumem_cmd[@]}"; time_one "" "${smi_cmd[@]}"; done
  for ((i = 0; i < runs; i++)); do
    if ((i % 2 == 0)); then
      time_one gpumem "${gpumem_cmd[@]}"; time_one nvidia-smi "${smi_cmd[@]}"
    else
      time_one nvidia-smi "${smi_cmd[@]}"; time_one gpumem "${gpumem_cmd[@]}"
    fi
  done
fi

# name -> "median p10 p90 min max" (ms), percentiles by linear interpolation.
stats() {
  grep "^$1 " "$samples" | awk '{ print $2 }' | sort -g | awk '
    { v[NR] = $1 }
    function pct(p,   r, lo, f) { r = p / 100 * (NR - 1); lo = int(r); f = r - lo
      return (lo + 1 < NR) ? v[lo + 1] + (v[lo + 2] - v[lo + 1]) * f : v[NR] }
    END { printf "%.2f %.2f %.2f %.2f %.2f %d\n", pct(50), pct(10), pct(90), v[1], v[NR], NR }'
}
read -r g_med g_p10 g_p90 g_min g_max g_n <<<"$(stats gpumem)"
read -r s_med s_p10 s_p90 s_min s_max s_n <<<"$(stats nvidia-smi)"
ratio=$(awk -v a="$g_med" -v b="$s_med" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')

report=$(cat <<MD
## gpumem info vs nvidia-smi: wall time of one query

- date: $when
- device: $device
- driver: $driver
- gpumem: \`$bin\` ($version)
- host CPU: ${host_cpu:-unknown}
- method: $g_n runs of each after $warmup warm-ups, interleaved (alternating which goes first); whole process, stdout and stderr to /dev/null; timer: $timer

| command | median ms | p10 ms | p90 ms | min ms | max ms | runs |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
| \`${gpumem_cmd[*]}\` | $g_med | $g_p10 | $g_p90 | $g_min | $g_max | $g_n |
| \`${smi_cmd[*]}\` | $s_med | $s_p10 | $s_p90 | $s_min | $s_max | $s_n |

Ratio of medians, gpumem / nvidia-smi: **$ratio**
MD
)
printf '%s\n' "$report"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  printf '%s\n' "$report" >"$OUT/info-bench.md"
fi
