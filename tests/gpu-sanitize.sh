#!/usr/bin/env bash
# compute-sanitizer over gpumem on the GPU machine, from the repository root:
#   bash tests/gpu-sanitize.sh [DIR] [TOOL...]
# DIR holds gpumem and tests/ (default .device, see tools/stage-device.sh);
# TOOL: memcheck (run with --leak-check full), racecheck, initcheck, synccheck;
# default all four. For each tool it runs
#   - every GPU suite (DIR/tests/test_gpu*) with --target-processes
#     application-only: the suites' in-process cases (the core, MixMemory,
#     AutoDevice, the kernels, the copy and alloc engines, the CUDA upstream
#     of reuse-sim) run sanitized; the gpumem children they start do not
#     (those are covered by the next item). The faults suite is left out: it
#     is child processes only, timed to the second;
#   - a set of real gpumem invocations with small sizes that reach every
#     kernel, every host memory kind, every allocation API and every mode.
#     Not info: it reads NVML and makes no CUDA call, so compute-sanitizer
#     has nothing to instrument ("terminated before first instrumented API
#     call"); test_gpu_info checks that it creates no CUDA context.
# Failed CUDA API calls are not counted (--report-api-errors no): gpumem's
# handling of them (the out-of-memory paths above all, which several runs
# cause on purpose) is what the suites assert; the sanitizers' job here is
# memory access, leak, race, initialization and synchronization errors.
# Prints a markdown report (also to $OUT/gpu-sanitize-TOOLS.md when $OUT is
# set); exits 1 if any run has errors, leaks, times out or exits otherwise than
# expected.
#   SANITIZE_SUITE_TIMEOUT (seconds per suite run, default 300),
#   SANITIZE_RUN_TIMEOUT (per invocation, default 120)
set -u
dir=${1:-.device}
shift || true
tools=("$@")
[ ${#tools[@]} -eq 0 ] && tools=(memcheck racecheck initcheck synccheck)
dir=$(cd "$dir" && pwd)
export GPUMEM_BIN=$dir/gpumem
export GPUMEM_TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "compute-sanitizer not found" >&2; exit 2; }
log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
status=0
rows=""
total_runs=0

# sanitize TOOL NAME EXPECTED_EXIT TIMEOUT COMMAND...
sanitize() {
  local tool=$1 name=$2 expected=$3 limit=$4; shift 4
  local log=$log_dir/$tool-$name.log extra=()
  [ "$tool" = memcheck ] && extra=(--leak-check full)
  local start=$SECONDS
  # The suites skip their free-memory-level checks under initcheck, which
  # holds device memory of its own (tests/memory_levels.hpp).
  GPUMEM_SANITIZER_TOOL=$tool timeout -k 10 "$limit" "$sanitizer" --tool "$tool" "${extra[@]}" --report-api-errors no \
    --target-processes application-only "$@" >"$log" 2>&1
  local rc=$? took=$((SECONDS - start))
  local errors leaked verdict=ok
  errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -n 1)
  # racecheck sums up as "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)":
  # both errors and warnings count.
  [ -z "$errors" ] && errors=$(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9]*\) errors, \([0-9]*\) warnings).*/\1 \2/p' "$log" |
    tail -n 1 | awk 'NF == 2 {print $1 + $2}')
  leaked=$(sed -n 's/.*LEAK SUMMARY: \([0-9]*\) bytes leaked.*/\1/p' "$log" | tail -n 1)
  [ -z "$leaked" ] && leaked=0
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then verdict="TIMED OUT after ${limit}s"
  elif [ -z "$errors" ]; then verdict="NO SUMMARY (exit $rc)"
  elif [ "$rc" -ne "$expected" ] || [ "$errors" != 0 ] || [ "$leaked" != 0 ]; then verdict=FAILED
  fi
  total_runs=$((total_runs + 1))
  local row="| $tool | $name | $rc (expected $expected) | ${errors:-?} | $leaked | $took | $verdict |"
  rows+="$row"$'\n'
  # Row by row too, so that a run stopped by a time limit still leaves its table.
  [ -n "${OUT:-}" ] && echo "$row" >>"$OUT/gpu-sanitize-rows.md"
  [ -n "${OUT:-}" ] && [ "$verdict" != ok ] && { echo "=== $tool $name: $verdict"; tail -n 200 "$log"; } >>"$OUT/gpu-sanitize-failures.log"
  if [ "$verdict" != ok ]; then
    status=1
    echo "--- $tool $name: $verdict (exit $rc) ---" >&2
    grep -E "=========|ERROR|FAILED|error" "$log" | head -n 40 >&2
  fi
  echo "$tool $name: $verdict (exit $rc, errors ${errors:-?}, leaked $leaked, ${took}s)" >&2
}

g=$GPUMEM_BIN
trace=$log_dir/trace.csv
printf 'action,id,size,stream,tag\nalloc,1,1048576,0,a\nalloc,2,4096,0,b\nfree,1,,,\nalloc,3,2097152,0,a\nfree,2,,,\nfree,3,,,\n' >"$trace"
invocations() {  # NAME EXPECTED COMMAND...
  local tool=$1
  local -a cases=(
    "memset-8|0|$g memset -s 64MiB --width 8 --value 0x5a --verify --samples 2"
    "memset-16-offset|0|$g memset -s 64MiB --width 16 --value 0xbeef --offset 4KiB --verify --samples 2"
    "memset-32|0|$g memset -s 64MiB --width 32 --value 0xdeadbeef --verify --samples 2"
    "memset-host|0|$g memset --target host --host-memory pinned -s 16MiB --verify --samples 2"
    "copy-h2d|0|$g copy h2d -s 16MiB --verify --samples 2"
    "copy-d2h|0|$g copy d2h -s 16MiB --verify --samples 2"
    "copy-d2d|0|$g copy d2d -s 16MiB --verify --samples 2"
    "copy-h2h|0|$g copy h2h -s 16MiB --verify --samples 2"
    "copy-sm-h2d|0|$g copy h2d -s 16MiB --engine sm --verify --samples 2"
    "copy-sm-d2h|0|$g copy d2h -s 16MiB --engine sm --verify --samples 2"
    "copy-sm-d2d|0|$g copy d2d -s 16MiB --engine sm --verify --samples 2"
    "copy-bidir|0|$g copy bidir -s 8MiB --verify --samples 2"
    "copy-pageable|0|$g copy d2h -s 8MiB --host-memory pageable --verify --samples 2"
    "copy-registered|0|$g copy h2d -s 8MiB --host-memory registered --verify --samples 2"
    "copy-mapped-sm|0|$g copy h2d -s 8MiB --host-memory mapped --engine sm --verify --samples 2"
    "copy-sweep|0|$g copy h2d --sizes 4KiB..1MiB:x4 --samples 2"
    "latency-all|0|$g alloc-test latency --api all --sizes 4KiB,2MiB --iterations 3"
    "fill-verify|0|$g alloc-test fill 256MiB --chunk 64MiB --verify"
    "fill-200pct|5|$g alloc-test fill 200%"
    "churn-direct|0|$g alloc-test churn --ops 300 --sizes 4KiB..8MiB"
    "churn-async-pool|0|$g alloc-test churn --api async-pool --ops 300 --sizes 4KiB..8MiB"
    "churn-vmm|0|$g alloc-test churn --api vmm --ops 100 --sizes 2MiB..8MiB"
    "churn-mixmemory|0|$g alloc-test churn --via mixmemory --growth x1.5 --ops 300 --sizes 4KiB..8MiB"
    "hold|0|$g alloc-test hold 256MiB --duration 1s"
    "max|0|$g alloc-test max --chunk 4GiB"
    "reuse-sim-execute|0|$g reuse-sim replay --execute --steps 10 --strategy all"
    "reuse-sim-trace|0|$g reuse-sim replay --execute --trace $trace --strategy all"
  )
  local c name expected cmd
  for c in "${cases[@]}"; do
    IFS='|' read -r name expected cmd <<<"$c"
    # shellcheck disable=SC2086  # the command is split into words on purpose
    sanitize "$tool" "$name" "$expected" "${SANITIZE_RUN_TIMEOUT:-120}" $cmd
  done
}

for tool in "${tools[@]}"; do
  for suite in "$dir"/tests/test_gpu*; do
    name=$(basename "$suite")
    [ "$name" = test_gpu_faults ] && continue
    sanitize "$tool" "$name" 0 "${SANITIZE_SUITE_TIMEOUT:-300}" "$suite" --no-colors=true
  done
  invocations "$tool"
done

report="# gpumem under compute-sanitizer: ${tools[*]}

- date: $(date -u +%Y-%m-%dT%H:%MZ)
- device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 | head -n 1) ($(nvidia-smi -L | wc -l) GPU(s))
- sanitizer: $("$sanitizer" --version | tail -n 1)
- command: bash tests/gpu-sanitize.sh .device ${tools[*]}
- options: --report-api-errors no --target-processes application-only (memcheck: --leak-check full)

| tool | run | exit | errors | bytes leaked | seconds | verdict |
| --- | --- | --- | ---: | ---: | ---: | --- |
$rows
result: $([ $status -eq 0 ] && echo "$total_runs runs, no errors, no leaks" || echo 'ERRORS, LEAKS OR TIMEOUTS (see above)')"
echo "$report"
[ -n "${OUT:-}" ] && echo "$report" > "$OUT/gpu-sanitize-$(IFS=-; echo "${tools[*]}").md"
exit $status
