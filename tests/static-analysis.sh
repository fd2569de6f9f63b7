#!/usr/bin/env bash
# Static analysis of gpumem's own code (src/ and subcommands/, with the project
# headers they include; not tests/, bench/ or third-party headers):
#   - clang-tidy with the check set in .clang-tidy (every warning is an error),
#     over the C++ files in BUILD_DIR/compile_commands.json. src/core/kernels.cu is
#     left out: clang-tidy 14 cannot parse CUDA 13's headers in CUDA mode.
#     Its host code is covered by the sanitizer build and by nvcc's warnings.
#   - cppcheck --enable=warning,performance,portability on the same .cpp files
#     (it reads the .cu file's host headers through them).
# False positives are suppressed inline (NOLINT / cppcheck-suppress) with a
# comment saying why. Exits non-zero when either tool reports anything; the
# last line counts the two tools: "N passed, N failed, 0 skipped".
#   tests/static-analysis.sh [BUILD_DIR]     (default build; it must be configured)
#   JOBS (default 2): parallel clang-tidy processes
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cd "$root"
build=${1:-build}
if [ ! -f "$build/compile_commands.json" ]; then
  echo "static-analysis.sh: $build/compile_commands.json not found: run 'meson setup $build' first" >&2
  exit 2
fi
tidy=$(command -v run-clang-tidy || command -v run-clang-tidy-14 || true)
if [ -z "$tidy" ] || ! command -v cppcheck >/dev/null; then
  echo "static-analysis.sh: needs run-clang-tidy (clang-tidy) and cppcheck" >&2
  exit 2
fi

mapfile -t files < <(cd src && git ls-files '*.cpp' | sed 's|^|src/|'; cd ../subcommands && git ls-files '*.cpp' | sed 's|^|subcommands/|')
status=0
tools_failed=0  # of the two tools

echo "clang-tidy: ${#files[@]} files"
# run-clang-tidy takes regular expressions: anchor each path.
patterns=()
for f in "${files[@]}"; do patterns+=("^$root/${f//./\\.}\$"); done
if ! "$tidy" -j"${JOBS:-2}" -quiet -p "$build" "${patterns[@]}" >"$build/clang-tidy.log" 2>&1; then
  sed 's/\x1b\[[0-9;]*m//g' "$build/clang-tidy.log" | grep -E '(warning|error):' | sort -u
  echo "clang-tidy: findings (full log in $build/clang-tidy.log)"
  status=1
  tools_failed=1
fi

echo "cppcheck: ${#files[@]} files"
if ! cppcheck --enable=warning,performance,portability --inline-suppr --error-exitcode=1 --std=c++17 --language=c++ \
     -q -I src -I subcommands -I "$build" --suppress=missingIncludeSystem "${files[@]}"; then
  echo "cppcheck: findings"
  status=1
  tools_failed=$((tools_failed + 1))
fi

[ $status -eq 0 ] && echo "static analysis: clean (clang-tidy and cppcheck, ${#files[@]} files)"
echo "$((2 - tools_failed)) passed, $tools_failed failed, 0 skipped"
exit $status
