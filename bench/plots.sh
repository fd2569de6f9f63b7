#!/usr/bin/env bash
# The pictures of docs/plots/ (issue 46), made by gpumem --plot on the GPU
# machine, each beside the table the same run printed (NAME.txt):
#   copy-h2d.svg, copy-d2h.svg, copy-d2d.svg, copy-bidir.svg
#                      copy --sizes 4KiB..1GiB: median bandwidth against the
#                      size, the PCIe link's rate or half the peak memory
#                      bandwidth dashed
#   memset.svg         memset --sizes 4KiB..4GiB, the peak memory bandwidth dashed
#   replay.svg         reuse-sim over a real PyTorch recording (the
#                      transformer fixture, recorded on an H200), five
#                      strategies under a cap two of them run out of memory in
#                      (no GPU needed: docs/plots/ has it already)
#   tune.svg           the same recording, tune under that cap (no GPU needed)
#   max-batch.svg      reuse-sim max-batch end to end on a real program
#                      (bench/batch_programs/transformer_encoder.py, real torch),
#                      --confirm's real runs marked
# Needs a GPU (copy, memset) and real torch for max-batch (skipped, with a
# line saying so, where python3 cannot import torch).
#   GPUMEM=.device/gpumem OUT=$OUT bash bench/plots.sh    (default: build/gpumem, docs/plots)
set -euo pipefail
cd "$(dirname "$0")/.."
GPUMEM=${GPUMEM:-build/gpumem}
OUT=${OUT:-docs/plots}
[ -x "$GPUMEM" ] || { echo "plots.sh: no gpumem binary at $GPUMEM (set GPUMEM)" >&2; exit 2; }
mkdir -p "$OUT"
trace=tests/fixtures/torch/transformer_train.pickle
replay_cap=${REPLAY_CAP:-300MiB}
replay_strategies=${REPLAY_STRATEGIES:-torch-caching,async-pool,pool,grow-only,binning}
mb_program=${MB_PROGRAM:-bench/batch_programs/transformer_encoder.py}
mb_cap=${MB_CAP:-8GiB}

run() {  # NAME ARGS...: gpumem ARGS, its table in OUT/NAME.txt, timed
    local name=$1; shift
    local start=$SECONDS
    echo "+ gpumem $*" >&2
    "$GPUMEM" "$@" >"$OUT/$name.txt"
    echo "  $name: $((SECONDS - start)) s" >&2
}

"$GPUMEM" info >"$OUT/gpu.txt" || true
for direction in h2d d2h d2d bidir; do
    run "copy-$direction" copy "$direction" --sizes 4KiB..1GiB --plot "$OUT/copy-$direction.svg"
done
run memset memset --sizes 4KiB..4GiB --plot "$OUT/memset.svg"
run replay reuse-sim replay --trace "$trace" --strategy "$replay_strategies" --capacity "$replay_cap" --plot "$OUT/replay.svg"
run tune reuse-sim tune --trace "$trace" --capacity "$replay_cap" --plot "$OUT/tune.svg"
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    run max-batch reuse-sim max-batch --capacity "$mb_cap" --confirm --plot "$OUT/max-batch.svg" \
        -- python3 "$mb_program" --bs '{batch}' --steps 3
else
    echo "plots.sh: no torch with CUDA here: max-batch.svg not made" >&2
fi
ls -l "$OUT"
