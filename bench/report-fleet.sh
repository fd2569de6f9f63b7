#!/usr/bin/env bash
# gpumem report at fleet scale (issue 29): 100 000 generated check documents
# (12 500 nodes x 8 GPUs, bench/report-fleet-gen.py) merged by `gpumem report
# DIR`, timed with /usr/bin/time: wall, user and system seconds, peak memory
# (max RSS). Runs on any machine (no GPU): pretty files, the same as JSON
# Lines, gzip-compressed, on 1 CPU (taskset) and on all, and at 1/4 of the
# fleet to show that memory follows the rows; the table (default), the drain
# list and the JSON document (every GPU's every figure: about 0.4 GB of it) as
# outputs. On a shared machine, wall time is not the figure: user+sys over
# the CPUs used is.
#   bench/report-fleet.sh [GPUMEM] [NODES]     (default build/gpumem, 12500)
#   FLEET_DIR (default /tmp/gpumem-fleet): where the generated documents go
set -euo pipefail
gpumem=${1:-build/gpumem}
nodes=${2:-12500}
dir=${FLEET_DIR:-/tmp/gpumem-fleet}
here=$(cd "$(dirname "$0")" && pwd)

gen() {  # NAME NODES [GENERATOR OPTION...]
  local out=$dir/$1 n=$2; shift 2
  [ -f "$out/.done-$n" ] || { rm -rf "$out"; "$here/report-fleet-gen.py" "$out" --nodes "$n" "$@" >/dev/null && touch "$out/.done-$n"; }
}
gen pretty "$nodes"
gen jsonl "$nodes" --jsonl
gen gzip "$nodes" --gzip
gen quarter $((nodes / 4))

echo "# gpumem report over $((nodes * 8)) generated check documents"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| input | CPUs | documents | bytes read | wall s | user s | sys s | (user+sys)/CPUs s | max RSS MiB | exit |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
run() {  # LABEL CPUS DIR [REPORT OPTION...]
  local label=$1 cpus=$2 in=$3 log rc bytes docs
  shift 3
  [ $# -gt 0 ] && label="$label ($*)"
  log=$(mktemp)
  set +e
  taskset -c "$(seq -s, 0 $((cpus - 1)))" /usr/bin/time -f '%e %U %S %M' -o "$log" "$gpumem" report "$@" "$in" >"$log.out" 2>/dev/null
  rc=$?
  set -e
  read -r wall user sys rss < <(tail -n 1 "$log")  # after "Command exited with non-zero status 7"
  bytes=$(du -sb --exclude='.done-*' "$in" | cut -f1)
  docs=$(head -c 100000 "$log.out" | grep -o -m1 -E '^[0-9]+ documents?' | cut -d' ' -f1 || true)
  [ -n "$docs" ] || docs=$(grep -c '"source"' "$log.out" || true)
  printf '| %s | %s | %s | %s | %s | %s | %s | %.2f | %d | %s |\n' "$label" "$cpus" "$docs" "$bytes" "$wall" "$user" "$sys" \
    "$(echo "($user + $sys) / $cpus" | bc -l)" $((rss / 1024)) "$rc"
  rm -f "$log" "$log.out"
}
all=$(nproc)
run "pretty JSON, one file per node" "$all" "$dir/pretty"
run "pretty JSON, one file per node" "$all" "$dir/pretty" --drain-list
run "pretty JSON, one file per node" "$all" "$dir/pretty" --json
run "pretty JSON, one file per node" 1 "$dir/pretty"
run "JSON Lines, one file per node" "$all" "$dir/jsonl"
run "pretty JSON, gzip (.json.gz)" "$all" "$dir/gzip"
run "a quarter of the fleet (pretty)" "$all" "$dir/quarter"
echo
echo "Exit 7 is the fleet's verdict (the generator plants failures and outliers), not a fault."
