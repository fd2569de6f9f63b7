#!/usr/bin/env bash
# Every GPU suite N times in a row on the GPU machine (issue 26's "10 times in
# a row"), after tools/stage-device.sh. Runs FIRST..LAST; a run is not started
# once BUDGET seconds have passed, so that a call stays inside the device
# tool's per-call limit and the next call goes on from where this one stopped.
#   OUT=dir BUDGET=470 bash tools/device-repeat.sh FIRST LAST
# Each run's log is $OUT/suites.N.log; the last line says which runs finished.
set -u
first=${1:-1} last=${2:-10} budget=${BUDGET:-470}
OUT=${OUT:-/tmp/gpumem-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpus.$first.txt"
suites=()
for f in .device/tests/test_gpu*; do [ -x "$f" ] && suites+=("$(basename "$f")"); done
done_runs=0 bad=0
for i in $(seq "$first" "$last"); do
  if [ $SECONDS -ge "$budget" ]; then echo "run $i not started: ${SECONDS} s used of ${budget}"; break; fi
  s=$SECONDS
  tests/run-tests.sh .device "${suites[@]}" >"$OUT/suites.$i.log" 2>&1
  rc=$?
  echo "run $i ($((SECONDS - s)) s, exit $rc): $(tail -n 1 "$OUT/suites.$i.log")"
  [ $rc -eq 0 ] || { bad=1; grep -E 'ERROR|FATAL|CRASHED' "$OUT/suites.$i.log" | head -20; }
  done_runs=$i
done
echo "finished runs $first..$done_runs, $([ $bad -eq 0 ] && echo 'all passed' || echo 'SOME FAILED')"
