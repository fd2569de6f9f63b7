#!/usr/bin/env bash
# One GPU call (at most 9 minutes, a machine of 2 GPUs) for the open points
# of issues 44 and 47, all at once:
#  1. the truth of llama_prefill under 6 and 14 GiB searched again on this
#     machine's own cards (doubling from 64, bisection, then up to 8 batches
#     below): run 1's truth came from H100s, gpumem's answers from H200s;
#  2. gpumem's answer for the DDP program under torchrun (2 ranks, rank 1
#     at twice the batch, 4 GiB), which ran past run 2's 420 s under the
#     load of 12 other processes; here it has the time it needs;
#  3. issue 44's programs recorded again with the hook that notes a capture
#     before its bookkeeping (bench/record-allocator-features.sh), on GPU 1.
#
#   GPUMEM=.device/gpumem OUT=$OUT bash bench/gpu-run-3.sh
#
# $OUT gets gpu-run-3.log, llama.tgz and ddp.tgz (max_batch_truth.py's work
# folders), features.tgz (the recordings, summary.md), each written as its
# part ends.
set -u
OUT=${OUT:?set OUT}
GPUMEM=${GPUMEM:-.device/gpumem}
HERE=$(cd "$(dirname "$0")" && pwd)
[ -x "$GPUMEM" ] || { echo "gpu-run-3.sh: no gpumem binary at $GPUMEM" >&2; exit 2; }
GPUMEM=$(cd "$(dirname "$GPUMEM")" && pwd)/$(basename "$GPUMEM")
WORK=${WORK:-/tmp/gpu-run-3}
rm -rf "$WORK"; mkdir -p "$WORK" "$OUT"
exec 2> >(tee -a "$OUT/gpu-run-3.log" >&2)
{ date -u; nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__)'; "$GPUMEM" --version; } >> "$OUT/gpu-run-3.log" 2>&1

( python3 "$HERE/max_batch_truth.py" --work "$WORK/llama" --programs llama_prefill --caps "6GiB 14GiB" --gpus 0 \
      --start-bs 64 --below 8 --deadline 330 --hard-limit 400 > "$WORK/llama.log" 2>&1
  tar czf "$OUT/llama.tgz" -C "$WORK" llama llama.log ) &
( python3 "$HERE/max_batch_truth.py" --work "$WORK/ddp" --programs '' --torchrun ddp_uneven@4GiB --gpus "0 1" --no-truth \
      --gpumem "$GPUMEM" --gpumem-args "--full-grid --confirm --max-runs 10" --gpumem-timeout 500 \
      --deadline 60 --hard-limit 540 > "$WORK/ddp.log" 2>&1
  tar czf "$OUT/ddp.tgz" -C "$WORK" ddp ddp.log ) &
( CUDA_VISIBLE_DEVICES=1 bash "$HERE/record-allocator-features.sh" "$GPUMEM" "$WORK/features" > "$WORK/features.log" 2>&1
  tar czf "$OUT/features.tgz" -C "$WORK" features features.log ) &
wait
echo "gpu-run-3.sh: done after $SECONDS s" >&2
