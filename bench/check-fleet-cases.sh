#!/usr/bin/env bash
# gpumem check in the cases a fleet acts on, on device 0:
#   1. memory in use: another process holds most of the memory
#      (`gpumem alloc-test hold 90%`); check must fail nvml.memory.in_use
#      naming that process's pid, with remediation drain; once it exits,
#      check passes again.
#   2. --format nagios exit statuses: OK (0) on the clean GPU, WARNING (1)
#      with another process present but under a raised memory threshold,
#      CRITICAL (2) with the memory held, UNKNOWN (3) for a usage error.
# Self-contained: needs only gpumem, python3 and nvidia-smi. Runs on the GPU
# machine:  bash bench/check-fleet-cases.sh DIR   (DIR holds gpumem)
# Writes markdown to stdout, and to $OUT/check-fleet-cases.md when $OUT is
# set. Exits 0 when every expectation held, 1 otherwise.
set -eu
dir=${1:?usage: check-fleet-cases.sh DIR}
gpumem=$dir/gpumem
[ -x "$gpumem" ] || { echo "missing $gpumem" >&2; exit 2; }
work=$(mktemp -d)
holder=
cleanup() {
  if [ -n "$holder" ] && kill -0 "$holder" 2>/dev/null; then kill -TERM "$holder"; wait "$holder" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
devices=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | sed 's/^ *//' | paste -sd, - || echo unknown)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 2>/dev/null | head -n 1 || echo unknown)
failures=0
out="$work/report.md"

expect() {  # expect NAME WANTED_STATUS GOT_STATUS
  if [ "$2" = "$3" ]; then echo "- $1: exit $3 (expected $2): **ok**" >>"$out"
  else echo "- $1: exit $3 (expected $2): **UNEXPECTED**" >>"$out"; failures=$((failures + 1)); fi
}

# nagios NAME WANTED ARGS...: a --format nagios run, its line kept.
nagios() {
  local name=$1 wanted=$2 status=0
  shift 2
  "$gpumem" --format nagios -d 0 check "$@" >"$work/nagios.out" 2>"$work/nagios.err" || status=$?
  expect "nagios $name (\`gpumem --format nagios -d 0 check $*\`)" "$wanted" "$status"
  { echo; echo '```'; cut -c1-600 "$work/nagios.out"; echo '```'; } >>"$out"
}

# in_use FILE: the nvml.memory.in_use check of GPU 0 in a check document.
in_use() {
  python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
c = next(c for c in doc["checks"] if c["check"] == "nvml.memory.in_use" and c["index"] == 0)
print(f'{c["verdict"]}\t{c.get("remediation", "-")}\t{c["reason"]}')
PY
}

{
  echo "# gpumem check: the fleet cases (memory in use, nagios exit statuses)"
  echo
  echo "Date $(date -u +%Y-%m-%dT%H:%MZ); host $(hostname -s); devices: $devices; driver $driver; $("$gpumem" --version | head -n 1)."
  echo "Command: \`bash bench/check-fleet-cases.sh $dir\`."
  echo
  echo "## Clean GPU"
  echo
} >"$out"

status=0
"$gpumem" -d 0 check --level quick --json >"$work/clean.json" 2>/dev/null || status=$?
expect "check --level quick on the clean GPU" 0 "$status"
IFS=$'\t' read -r verdict remedy reason < <(in_use "$work/clean.json")
echo "  - nvml.memory.in_use: $verdict, remediation $remedy: $reason" >>"$out"
# The plugin's status is the JSON verdict's: a GPU with an old uncorrected
# ECC error over its life warns (1) in both.
run_verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/clean.json")
case $run_verdict in pass|n/a) wanted=0 ;; warn) wanted=1 ;; fail) wanted=2 ;; *) wanted=3 ;; esac
echo "- the clean GPU's JSON verdict: $run_verdict" >>"$out"
nagios "status of the clean GPU, as its JSON verdict ($run_verdict)" "$wanted" --level quick
# OK whatever the GPU's history: lifetime uncorrected ECC errors accepted.
nagios "OK with the GPU's lifetime ECC count accepted" 0 --level quick --threshold nvml.ecc.uncorrected.aggregate=1000000

{ echo; echo "## Memory held by another process"; echo; } >>"$out"
"$gpumem" -d 0 alloc-test hold 90% --duration 120 >"$work/hold.out" 2>"$work/hold.err" &
holder=$!
for _ in $(seq 600); do
  grep -q '^ready' "$work/hold.out" 2>/dev/null && break
  kill -0 "$holder" 2>/dev/null || break
  sleep 0.1
done
echo "- holder: \`gpumem -d 0 alloc-test hold 90% --duration 120\`, pid $holder: $(head -n 1 "$work/hold.out")" >>"$out"
for level in quick standard; do
  status=0
  start=$(date +%s.%N)
  "$gpumem" -d 0 check --level "$level" --json >"$work/held-$level.json" 2>"$work/held-$level.err" || status=$?
  end=$(date +%s.%N)
  expect "check --level $level with the memory held ($(awk "BEGIN{printf \"%.2f\", $end - $start}") s)" 7 "$status"
  IFS=$'\t' read -r verdict remedy reason < <(in_use "$work/held-$level.json")
  echo "  - nvml.memory.in_use: $verdict, remediation $remedy: $reason" >>"$out"
  if [ "$verdict" = fail ] && [ "$remedy" = drain ] && printf '%s' "$reason" | grep -q "pid $holder"; then
    echo "  - fails naming the holder's pid $holder, remediation drain: **ok**" >>"$out"
  else
    echo "  - expected a failure naming pid $holder with remediation drain: **UNEXPECTED**" >>"$out"
    failures=$((failures + 1))
  fi
  { echo "  - stderr:"; echo; echo '```'; cut -c1-400 "$work/held-$level.err"; echo '```'; } >>"$out"
done
nagios "CRITICAL with the memory held" 2 --level quick
nagios "WARNING: another process, memory threshold raised to 200GiB" 1 --level quick --threshold nvml.memory.in_use=200GiB
kill -TERM "$holder"
wait "$holder" 2>/dev/null || true
holder=

{ echo; echo "## After the holder exited"; echo; } >>"$out"
status=0
"$gpumem" -d 0 check --level quick --json >"$work/after.json" 2>/dev/null || status=$?
expect "check --level quick after the holder exited" 0 "$status"
IFS=$'\t' read -r verdict remedy reason < <(in_use "$work/after.json")
echo "  - nvml.memory.in_use: $verdict, remediation $remedy: $reason" >>"$out"

{ echo; echo "## Usage errors under --format nagios"; echo; } >>"$out"
nagios "UNKNOWN for a bad level" 3 --level fast
nagios "UNKNOWN for a fraction of a byte" 3 --threshold alloc.max=3.5B

{ echo; echo "$failures unexpected result(s)."; } >>"$out"
cat "$out"
if [ -n "${OUT:-}" ]; then cp "$out" "$OUT/check-fleet-cases.md"; fi
[ "$failures" -eq 0 ]
