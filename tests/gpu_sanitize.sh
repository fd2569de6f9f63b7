#!/usr/bin/env bash
# compute-sanitizer memcheck with a full leak check over alloc-test, on the GPU
# machine from the repository root:
#   bash tests/gpu_sanitize.sh [DIR]     (DIR holds gpumem and tests/; default .device)
# Runs the in-process cases of the GPU alloc suite (the cases that start child
# processes are left out: memcheck would follow them, and filling most of the
# GPU under memcheck takes far too long) and a few small alloc-test runs of
# every mode. Prints a markdown table of error and leak counts (to
# $OUT/alloc-sanitize.md too if $OUT is set); exits 1 if any run has errors
# or leaks.
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
  local errors leaks
  errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -n 1)
  leaks=$(sed -n 's/.*LEAK SUMMARY: \([0-9]*\) bytes leaked in \([0-9]*\) allocations.*/\1 bytes in \2/p' "$log" | tail -n 1)
  [ -z "$leaks" ] && leaks=0
  rows+="| $name | $rc (expected $expected) | ${errors:-?} | $leaks |"$'\n'
  if [ "$rc" -ne "$expected" ] || [ "${errors:-1}" != 0 ] || [ "$leaks" != 0 ]; then
    status=1
    echo "--- $name (exit $rc) ---" >&2
    grep -E "Invalid|leaked|ERROR|error" "$log" | head -n 30 >&2
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

| run | exit | errors | leaked |
| --- | --- | ---: | ---: |
$rows
result: $([ $status -eq 0 ] && echo 'no errors, no leaks' || echo 'ERRORS OR LEAKS (see stderr)')"
echo "$report"
[ -n "${OUT:-}" ] && echo "$report" > "$OUT/alloc-sanitize.md"
exit $status
