#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for SECONDS each, one after the
# other (one process at a time: -workers/-jobs are left at 1), on a scratch
# copy of its seed corpus, and any Python target (a corpus/NAME with a
# fuzz/NAME.py; none now) with python3 on its corpus; prints one line per
# target:
#   TARGET  EXECUTIONS  SECONDS  ok|FINDING
# The last line is "N passed, N failed, 0 skipped" (a target with a finding,
# or not built, fails). Exits 1 when any target fails (a finding's crash-* /
# timeout-* / oom-* input is kept under the scratch directory, whose path is
# printed).
#   fuzz/run.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]
# FUZZ_MAX_RUNS=N also stops a target after N executions (the hardening goal
# is 10 million or 30 minutes: FUZZ_MAX_RUNS=10000000 fuzz/run.sh B 1800).
# A dictionary fuzz/TARGET.dict is used when there is one. stdout and stderr
# of the targets are closed (-close_fd_mask=3): libFuzzer and the sanitizers
# report on their own copy of stderr, which goes to the log.
set -u
if [ $# -lt 2 ]; then
  echo "usage: fuzz/run.sh BUILD_DIR SECONDS_PER_TARGET [TARGET...]" >&2
  exit 2
fi
build=$1
seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -gt 0 ]; then targets=("$@"); else
  targets=()
  for d in "$here"/corpus/*/; do targets+=("$(basename "$d")"); done
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpumem-fuzz.XXXXXX")
findings=0
clean=0
printf '%-22s %12s %8s  %s\n' target executions seconds result
for t in "${targets[@]}"; do
  corpus=$scratch/$t/corpus
  artifacts=$scratch/$t/artifacts
  log=$scratch/$t/log
  if [ -f "$here/$t.py" ]; then
    # A Python target: the same 5 s per input and
    # 64 KiB input limit (no RSS limit), the same
    # "stat::number_of_executed_units" line; it never writes its corpus.
    mkdir -p "$artifacts"
    start=$(date +%s)
    python3 "$here/$t.py" "$here/corpus/$t" --seconds "$seconds" --runs "${FUZZ_MAX_RUNS:-0}" \
      --artifacts "$artifacts" >"$log" 2>&1
    rc=$?
  else
    exe=$build/fuzz/$t
    if [ ! -x "$exe" ]; then
      echo "$t: $exe not built (ninja -C $build fuzz)" >&2
      findings=$((findings + 1))
      continue
    fi
    mkdir -p "$corpus" "$artifacts"
    cp "$here/corpus/$t"/* "$corpus"/ 2>/dev/null
    start=$(date +%s)
    extra=()
    [ -f "$here/$t.dict" ] && extra+=("-dict=$here/$t.dict")
    [ -n "${FUZZ_MAX_RUNS:-}" ] && extra+=("-runs=$FUZZ_MAX_RUNS")
    "$exe" "$corpus" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -close_fd_mask=3 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" >"$log" 2>&1
    rc=$?
  fi
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
  result=ok
  if [ $rc -ne 0 ] || ls "$artifacts" | grep -q .; then
    result="FINDING (exit $rc; log $log, inputs in $artifacts)"
    findings=$((findings + 1))
  fi
  printf '%-22s %12s %8s  %s\n' "$t" "${execs:-?}" "$elapsed" "$result"
  [ "$result" = ok ] && clean=$((clean + 1))
done
if [ $findings -gt 0 ]; then
  echo "$findings target(s) with findings; scratch kept in $scratch" >&2
  echo "$clean passed, $findings failed, 0 skipped"
  exit 1
fi
rm -rf "$scratch"
echo "$clean passed, 0 failed, 0 skipped"
