#!/usr/bin/env bash
# One GPU call after a change to GPU paths (run after issues 53, 56 and 57,
# and again after issue 53's second part moved reuse-sim's real runs, the
# process layer and every width): every GPU suite, then gpumem against
# raw CUDA in the same run (bench/copy.sh, memset.sh: bandwidth ratios) and
# check's levels timed (bench/check.sh), on one GPU.
#   OUT=$OUT bash bench/gpu-run-4.sh        (after tools/stage-device.sh BUILD)
# $OUT gets env.txt, suites.log and the benches' reports, each as it ends.
set -u
OUT=${OUT:?set OUT}
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/.device/py
{ date -u; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)'; .device/gpumem --version; } >"$OUT/env.txt" 2>&1
suites=()
for f in .device/tests/test_gpu*; do suites+=("$(basename "$f")"); done
timeout 400 tests/run-tests.sh .device "${suites[@]}" >"$OUT/suites.log" 2>&1
echo "suites: exit $?" >>"$OUT/suites.log"
timeout 40 bash bench/memset.sh .device >/dev/null 2>"$OUT/memset.err"
timeout 60 bash bench/copy.sh .device >/dev/null 2>"$OUT/copy.err"
timeout 60 bash bench/check.sh .device 3 >/dev/null 2>"$OUT/check.err"
tail -n 12 "$OUT/suites.log"
