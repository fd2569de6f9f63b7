#!/usr/bin/env bash
# Does running under gpumem's recording hook change how much memory a
# program needs? One program at one batch under one cap, run four ways at
# once on one GPU, each a fresh process:
#   truth    bench/cap_run.py (PyTorch's own cap, no gpumem: the truth's way)
#   history  the same with torch.cuda.memory._record_memory_history on, as the
#            hook turns it on (enabled=all, stacks=python), nothing else
#   lazycap  the cap set when the program first initializes CUDA (as the hook
#            does), not before it runs, and no history
#   gpumem   gpumem reuse-sim record (the hook itself)
# and prints each one's verdict, OOM count and peak reserved.
#
#   GPUMEM=.device/gpumem bash bench/hook_effect.sh OUTDIR CAP BATCH -- prog.py ARGS ({batch} is replaced)
set -u
OUT=${1:?usage: hook_effect.sh OUTDIR CAP_BYTES BATCH -- prog.py ARGS}; CAP=${2:?}; BATCH=${3:?}; shift 3
[ "${1:-}" = "--" ] && shift
GPUMEM=${GPUMEM:-.device/gpumem}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
prog=("${@//\{batch\}/$BATCH}")
tag=b$BATCH
python3 "$HERE/cap_run.py" --cap "$CAP" --stats "$OUT/$tag.truth.json" -- "${prog[@]}" > "$OUT/$tag.truth.log" 2>&1 &
HOOK_EFFECT=history python3 "$HERE/hook_effect_run.py" "$CAP" "$OUT/$tag.history.json" "${prog[@]}" > "$OUT/$tag.history.log" 2>&1 &
HOOK_EFFECT=lazycap python3 "$HERE/hook_effect_run.py" "$CAP" "$OUT/$tag.lazycap.json" "${prog[@]}" > "$OUT/$tag.lazycap.log" 2>&1 &
"$GPUMEM" reuse-sim record -o "$OUT/$tag.gpumem.pickle" --capacity "$CAP" -- python3 "${prog[@]}" > "$OUT/$tag.gpumem.log" 2>&1 &
wait
for way in truth history lazycap; do
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], sys.argv[3], d.get("verdict"), "ooms", d.get("num_ooms"), "peak_reserved", d.get("peak_reserved"), "retries", d.get("retries"))' \
        "$OUT/$tag.$way.json" "$BATCH" "$way" 2>/dev/null || echo "$BATCH $way: no stats ($(tail -1 "$OUT/$tag.$way.log"))"
done
python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["memory_stats"]; print(sys.argv[2], "gpumem", "oom" if m.get("num_ooms") else "fits", "ooms", m.get("num_ooms"), "peak_reserved", m.get("reserved_bytes.all.peak"), "retries", m.get("num_alloc_retries"))' \
    "$OUT/$tag.gpumem.stats.json" "$BATCH" 2>/dev/null || echo "$BATCH gpumem: no stats ($(tail -1 "$OUT/$tag.gpumem.log"))"
