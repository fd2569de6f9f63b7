#!/usr/bin/env bash
# Runs every test suite of a build directly (no Meson needed, so it also runs
# on the GPU machine) and ends with the line "N passed, N failed, N skipped",
# counting doctest test cases. A GPU suite that exits 77 counts its cases as
# skipped.
#   tests/run-tests.sh [BUILD_DIR] [SUITE...]    (default: build, all suites)
set -u
build=${1:-build}
shift || true
here=$(cd "$(dirname "$0")" && pwd)
export GPUMEM_BIN=${GPUMEM_BIN:-$(cd "$build" && pwd)/gpumem}
export GPUMEM_TESTS_DIR=$here
if [ $# -gt 0 ]; then suites=("$@"); else
  suites=()
  for f in "$build"/tests/test_*; do [ -x "$f" ] && [ -f "$f" ] && suites+=("$(basename "$f")"); done
fi
passed=0 failed=0 skipped=0 broken=0
for s in "${suites[@]}"; do
  exe=$build/tests/$s
  log=$(mktemp)
  start=$SECONDS
  "$exe" --no-colors=true >"$log" 2>&1
  rc=$?
  took="$((SECONDS - start)) s"
  summary=$(grep -E '^\[doctest\] test cases:' "$log" | tail -n 1)
  if [ $rc -eq 77 ]; then
    n=$("$exe" --count 2>/dev/null | sed -n 's/.*passing the current filters: \([0-9]*\).*/\1/p')
    n=${n:-1}
    skipped=$((skipped + n))
    printf '%-18s SKIP (%s cases): %s\n' "$s" "$n" "$(tail -n 1 "$log")"
  elif [ -n "$summary" ]; then
    p=$(sed -n 's/.*| *\([0-9]*\) passed.*/\1/p' <<<"$summary")
    f=$(sed -n 's/.*| *\([0-9]*\) failed.*/\1/p' <<<"$summary")
    k=$(sed -n 's/.*| *\([0-9]*\) skipped.*/\1/p' <<<"$summary")
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${k:-0}))
    if [ $rc -ne 0 ] && [ "${f:-0}" -eq 0 ]; then failed=$((failed + 1)); broken=1; fi
    printf '%-18s %s  (%s)\n' "$s" "${summary#\[doctest\] test cases: }" "$took"
    [ $rc -ne 0 ] && { grep -E 'ERROR|FATAL|error:|failed' "$log" | head -n 40; }
  else
    failed=$((failed + 1)); broken=1
    printf '%-18s CRASHED (exit %d, %s)\n' "$s" "$rc" "$took"
    tail -n 20 "$log"
  fi
  rm -f "$log"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
