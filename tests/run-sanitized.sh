#!/usr/bin/env bash
# The CPU suites under AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer included), in a second build directory built with clang and
# -Dfuzz=true: that option instruments every C++ object of the build (ASan,
# UBSan with -fno-sanitize-recover, so any UB report aborts the process, and
# libFuzzer's coverage hooks), so the same directory also holds the fuzz
# targets (fuzz/run.sh BUILD_DIR SECONDS) and CI builds it once for both.
# The gpumem binary that the CLI and bad-input suites spawn is the sanitized
# one. The GPU suites are built only where nvidia-smi finds a GPU.
#
# Not instrumented: the device code and host stubs of src/core/kernels.cu (nvcc
# compiles it with its own host compiler) and the prebuilt static CUDA
# runtime; only one GPU architecture is built, as the kernels never run here,
# and no bench baseline (CI's tests build compiles those).
# Any report fails the run: ASan and LSan exit non-zero, UBSan aborts, and
# run-tests.sh counts a crashed or failing suite as failed. There are no
# suppressions. Prints the run-tests.sh summary line last.
#   tests/run-sanitized.sh [BUILD_DIR]       (default build-san)
#   NINJA_JOBS (default 2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
build=${1:-build-san}

# -O0: the optimiser is most of a sanitized compile's time (-O3 took twice as
# long a file; -O1 was no faster than -O3), and the suites mostly wait on the
# processes they start; ASan and UBSan check the same at any level.
# The GPU suites only where a GPU is, to run them (on a GPU machine by hand):
# without one they would only skip, after costing a tenth of the build.
gpu_suites=false
nvidia-smi -L >/dev/null 2>&1 && gpu_suites=true
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=true -Dgpu_suites=$gpu_suites -Dgpu_archs=90 -Dbench=false -Doptimization=0 \
    -Dsystemd_units=false -Dman_pages=disabled -Dcompletions=false </dev/null >/dev/null
fi
# The build's own output only when it fails (a compile error is on stdout).
log=$(mktemp)
if ! ninja -j"${NINJA_JOBS:-2}" -C "$build" all fuzz </dev/null >"$log" 2>&1; then
  grep -E -A12 '^FAILED|error:' "$log" | head -60 >&2
  rm -f "$log"
  echo "run-sanitized.sh: the sanitized build failed"
  exit 1
fi
rm -f "$log"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1
exec "$here/run-tests.sh" "$build" </dev/null
