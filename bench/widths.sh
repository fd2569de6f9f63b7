#!/usr/bin/env bash
# The widest line of each GPU command's human output (stdout and stderr) as a
# person sees it: on a terminal 80 and 100 columns wide, and in a pipe (where
# gpumem keeps to 100). Issue 45's rule: none wider than the terminal, 100 in
# a pipe. test_gpu_core checks one device; this adds every device at once
# (-d all: a table per GPU, p2p's matrix) for the record in bench/results.
#   bench/widths.sh [GPUMEM]     (needs script(1) from util-linux)
set -u
gpumem=${1:-gpumem}
commands=(
  "info" "info -d all" "memset --size 64MiB --verify" "copy h2d --sizes 4KiB..64MiB"
  "copy p2p -d all --sizes 64MiB" "copy p2p-bidir -d 0,1 --sizes 64MiB" "alloc-test max -d all"
  "alloc-test latency --api device,async,host --iterations 10" "check --level quick -d all"
)
widest() { LC_ALL=C.UTF-8 awk '{ gsub(/\r/, ""); gsub(/\033\[[0-9;]*m/, ""); if (length($0) > w) w = length($0) } END { print w + 0 }'; }
printf '%-58s %9s %9s %6s\n' command "tty 80" "tty 100" pipe
for c in "${commands[@]}"; do
  row=()
  for cols in 80 100; do
    row+=("$(script -qec "stty cols $cols rows 50; $gpumem $c" /dev/null 2>&1 | widest)")
  done
  row+=("$($gpumem $c 2>&1 | widest)")
  printf '%-58s %9s %9s %6s\n' "gpumem $c" "${row[@]}"
done
