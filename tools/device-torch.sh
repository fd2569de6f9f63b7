#!/usr/bin/env bash
# The real-PyTorch batch on the GPU machine, after tools/stage-device.sh:
# bench/torch-programs.sh (a program's own cap, a spawned child, both alloc-conf
# names) and bench/record-graphs.sh (CUDA graphs, torch.compile's
# reduce-overhead, side-stream prefetch) and bench/record-fsdp.sh (FSDP on
# 2 GPUs), each program recorded by
# `gpumem reuse-sim record` and replayed. Everything each script made is
# tarred into $OUT (the device tool brings back at most 8 files).
#   OUT=dir bash tools/device-torch.sh [torch-programs] [record-graphs] [record-fsdp]   (default: the first two)
set -u
OUT=${OUT:-/tmp/gpumem-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpus.txt"
python3 -c 'import torch; print("torch", torch.__version__)' | tee -a "$OUT/gpus.txt"
gpumem=$PWD/.device/gpumem
run() {  # NAME SCRIPT
  local s=$SECONDS
  timeout 280 bash "$2" "$gpumem" "/tmp/$1" > "$OUT/$1.log" 2>&1
  echo "$1: exit $? in $((SECONDS - s)) s"
  cp "/tmp/$1/summary.md" "$OUT/$1.md" 2>/dev/null
  tar czf "$OUT/$1.tgz" -C /tmp "$1"
  ls -la "$OUT/$1.tgz"
}
[ $# -gt 0 ] || set -- torch-programs record-graphs
for name in "$@"; do run "$name" "bench/$name.sh"; done
