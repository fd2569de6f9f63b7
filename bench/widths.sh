#!/usr/bin/env bash
# The widest line of each GPU command's human output (stdout and stderr) as a
# person sees it: on a terminal 80 and 100 columns wide, and in a pipe (where
# gpumem keeps to 100). Issue 45's rule: none wider than the terminal, 100 in
# a pipe. test_gpu_core checks one device; this adds every device at once
# (-d all: a table per GPU, p2p's matrix) for the record in bench/results.
#   bench/widths.sh [GPUMEM]     (needs script(1) from util-linux)
#   WIDTHS_ONLY=REGEX bench/widths.sh ...   only the commands REGEX matches
set -u
gpumem=${1:-gpumem}
commands=(
  "info" "info -d all" "memset --size 64MiB --verify" "copy h2d --sizes 4KiB..64MiB"
  "copy p2p -d all --sizes 64MiB" "copy p2p-bidir -d 0,1 --sizes 64MiB" "alloc-test max -d all"
  "alloc-test latency --api device,async,host --iterations 10" "check --level quick -d all"
)
# As a terminal draws it: "\r" returns to column 0 (a progress line redrawn
# in place is as wide as its widest drawing), escape sequences take none.
# A column per UTF-8 character: bytes counted in the C locale, less the
# continuation bytes (mawk, the device's awk, counts bytes whatever the
# locale: a bar of 67 block characters read as 201).
widest() {
  LC_ALL=C awk '{ gsub(/\033\[[0-9;?]*[@-~]/, ""); gsub(/[\200-\277]/, ""); n = split($0, part, "\r")
    for (i = 1; i <= n; i++) if (length(part[i]) > w) w = length(part[i]) } END { print w + 0 }'
}
printf '%-58s %9s %9s %6s\n' command "tty 80" "tty 100" pipe
# reuse-sim's GPU jobs on a real PyTorch program, where python3 has torch
# with CUDA: record it, replay the recording for real (--execute), tune
# under a cap, and max-batch end to end (a dozen runs: under 6 GiB, the
# program's OOM tracebacks kept from the terminal).
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  here=$(cd "$(dirname "$0")" && pwd)
  rec=$(mktemp -d)
  trap 'rm -rf "$rec"' EXIT
  $gpumem reuse-sim record -q -o "$rec/mlp.pickle" -- python3 "$here/batch_programs/mlp.py" --bs 16 --steps 2 >/dev/null 2>&1
  commands+=(
    "reuse-sim record -o $rec/again.pickle -- python3 $here/batch_programs/mlp.py --bs 16 --steps 2"
    "reuse-sim replay --trace $rec/mlp.pickle --execute"
    "reuse-sim tune --trace $rec/mlp.pickle --capacity 1GiB"
    "reuse-sim max-batch --capacity 6GiB --confirm -- python3 $here/batch_programs/mlp.py --bs {batch} --steps 2"
  )
else
  echo "widths.sh: no torch with CUDA here: reuse-sim's jobs on a real program left out" >&2
fi
for c in "${commands[@]}"; do
  [ -n "${WIDTHS_ONLY:-}" ] && ! grep -Eq -- "$WIDTHS_ONLY" <<<"$c" && continue
  row=()
  for cols in 80 100; do
    row+=("$(script -qec "stty cols $cols rows 50; $gpumem $c" /dev/null 2>&1 | widest)")
  done
  row+=("$($gpumem $c 2>&1 | widest)")
  shown="gpumem $c"
  [ -n "${rec:-}" ] && shown=${shown//$rec/TMP}
  [ -n "${here:-}" ] && shown=${shown//$here/bench}
  printf '%-58s %9s %9s %6s\n' "$shown" "${row[@]}"
done
