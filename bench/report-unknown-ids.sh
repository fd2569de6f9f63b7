#!/usr/bin/env bash
# gpumem report over check ids it does not know (issue 48): 10 000 generated
# check documents (1 250 nodes x 8 GPUs, bench/report-fleet-gen.py) whose
# every id is today's, against the same documents with every id renamed
# (--unknown-ids: nvml.ecc_mode, as an older plan's documents have them).
# Before the fix, each unknown row built a did-you-mean message that was
# thrown away (16x the time). The figure is the ratio unknown/known of
# user+sys seconds, each the best of RUNS runs, measured in the same run for
# each binary given. Runs anywhere (no GPU).
#   bench/report-unknown-ids.sh [GPUMEM [BASELINE_GPUMEM]] (default build/gpumem)
#   NODES (default 1250), RUNS (default 3), FLEET_DIR (default /tmp/gpumem-fleet-ids)
set -euo pipefail
gpumem=${1:-build/gpumem}
baseline=${2:-}
nodes=${NODES:-1250}
runs=${RUNS:-3}
dir=${FLEET_DIR:-/tmp/gpumem-fleet-ids}
here=$(cd "$(dirname "$0")" && pwd)

gen() {  # NAME [GENERATOR OPTION...]
  local out=$dir/$1; shift
  [ -f "$out/.done-$nodes" ] || { rm -rf "$out"; "$here/report-fleet-gen.py" "$out" --nodes "$nodes" "$@" >/dev/null && touch "$out/.done-$nodes"; }
}
gen known
gen unknown --unknown-ids

best() {  # BINARY DIR: the least user+sys seconds of $runs runs, and the exit status
  local bin=$1 in=$2 log best="" t rc
  log=$(mktemp)
  for _ in $(seq "$runs"); do
    set +e
    /usr/bin/time -f '%U %S' -o "$log" "$bin" report "$in" >/dev/null 2>&1
    rc=$?
    set -e
    t=$(tail -n 1 "$log" | awk '{print $1 + $2}')
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
  done
  rm -f "$log"
  echo "$best $rc"
}

echo "# gpumem report: $((nodes * 8)) check documents, known against unknown check ids"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $(cut -d' ' -f1-3 /proc/loadavg); best of $runs runs"
echo
echo "| binary | known ids: user+sys s | unknown ids: user+sys s | unknown/known | exit (known, unknown) |"
echo "| --- | --- | --- | --- | --- |"
row() {  # LABEL BINARY
  read -r k krc < <(best "$2" "$dir/known")
  read -r u urc < <(best "$2" "$dir/unknown")
  printf '| %s | %.2f | %.2f | %.1fx | %s, %s |\n' "$1" "$k" "$u" "$(echo "$u / $k" | bc -l)" "$krc" "$urc"
}
[ -n "$baseline" ] && row "baseline ($baseline)" "$baseline"
row "$gpumem" "$gpumem"
echo
echo "Exit 7 is the fleet's verdict (the generator plants failures and outliers), not a fault."
