#!/usr/bin/env bash
# compute-sanitizer memcheck with a full leak check over alloc-test, on the GPU
# machine from the repository root:
#   bash tests/gpu_sanitize.sh [DIR]     (DIR holds gpumem and tests/; default .device)
# Runs the in-process cases of the GPU alloc suite (the cases that start child
# processes are left out: memcheck would follow them, and filling most of the
# GPU under memcheck takes far too long) and a few small alloc-test runs of
# every mode. Prints a markdown table of error and leak counts (to
# $OUT/alloc-sanitize.md too if $OUT is set); exits 1 if any run has errors
# other than the out-of-memory results that are the point of max and fill
# 200%, or leaks.
set -u
dir=${1:-.device}
export GPUMEM_BIN=$(cd "$dir" && pwd)/gpumem
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "compute-sanitizer not found" >&2; exit 2; }
log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
status=0
rows=""
run() {   # run NAME EXPECTED_EXIT COMMAND...
  local name=$1 expected=$2; shift 2
  local log=$log_dir/$name.log
  "$sanitizer" --tool memcheck --leak-check full --target-processes application-only "$@" >"$log" 2>&1
  local rc=$?
  local errors leaks oom other
  errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -n 1)
  leaks=$(sed -n 's/.*LEAK SUMMARY: \([0-9]*\) bytes leaked in \([0-9]*\) allocations.*/\1/p' "$log" | tail -n 1)
  [ -z "$leaks" ] && leaks=0
  # memcheck counts every failed API call as an error. The allocations that
  # are meant to fail (max's search, fill 200%, the partial-allocation test)
  # end in cudaErrorMemoryAllocation, reported once for the call and once for
  # the cudaGetLastError that clears it; those are counted apart.
  oom=$(grep -c 'Program hit cudaErrorMemoryAllocation' "$log")
  other=$(( ${errors:-0} - oom ))
  [ -z "$errors" ] && other="?"
  rows+="| $name | $rc (expected $expected) | $other | $oom | $leaks |"$'\n'
  if [ "$rc" -ne "$expected" ] || [ "$other" != 0 ] || [ "$leaks" != 0 ]; then
    status=1
    echo "--- $name (exit $rc) ---" >&2
    grep -E "Invalid|leaked|ERROR|error" "$log" | grep -v cudaErrorMemoryAllocation | head -n 30 >&2
  fi
}
run suite-in-process 0 "$dir/tests/test_gpu_alloc" --no-colors=true \
  -tc="gpu ApiAllocation*,gpu alloc-test core*"
g=$GPUMEM_BIN
run latency-all 0 "$g" alloc-test latency --api all --sizes 4KiB,2MiB --iterations 3
run max 0 "$g" alloc-test max --chunk 4GiB
run fill-verify 0 "$g" alloc-test fill 512MiB --chunk 128MiB --verify
run fill-200pct 5 "$g" alloc-test fill 200%
run churn-direct 0 "$g" alloc-test churn --ops 300 --sizes 4KiB..8MiB
run churn-async-pool 0 "$g" alloc-test churn --api async-pool --ops 300 --sizes 4KiB..8MiB
run churn-mixmemory 0 "$g" alloc-test churn --via mixmemory --ops 300 --sizes 4KiB..8MiB
run hold 0 "$g" alloc-test hold 1GiB --duration 1s
report="# alloc-test under compute-sanitizer (memcheck, --leak-check full)

- date: $(date -u +%Y-%m-%dT%H:%MZ)
- device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader -i 0 | head -n 1)
- sanitizer: $("$sanitizer" --version | tail -n 1)

| run | exit | errors | out-of-memory API errors (intended) | bytes leaked |
| --- | --- | ---: | ---: | ---: |
$rows
result: $([ $status -eq 0 ] && echo 'no errors, no leaks' || echo 'ERRORS OR LEAKS (see stderr)')"
echo "$report"
[ -n "${OUT:-}" ] && echo "$report" > "$OUT/alloc-sanitize.md"
exit $status
