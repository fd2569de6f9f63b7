#!/usr/bin/env bash
# Builds gpumem with AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer
# included) in a second build directory and runs the test suites there with
# tests/run-tests.sh. GPU suites exit 77 without a GPU and count as skipped;
# the CPU suites, and the gpumem binary the CLI tests spawn, run sanitized.
# Any sanitizer report fails the run: UBSan halts on its first error, ASan
# and LSan exit non-zero, and run-tests.sh counts a crashed suite as failed.
# Prints the run-tests.sh summary line last.
#   tests/run-sanitized.sh [BUILD_DIR]       (default build-asan)
#   NINJA_JOBS (default 2)
#
# Meson's b_sanitize also reaches nvcc, as -Xcompiler=-fsanitize=...: the host
# half of kernels.cu is instrumented like the C++ files, the device code is
# not (nvcc ignores host flags there), and the static CUDA runtime is a
# prebuilt archive, so it is not instrumented either. -Db_lundef=false is what
# Meson needs to link sanitized shared objects; harmless here. Only one GPU
# architecture is built: the kernels never run in this build, so building
# them for every architecture would only cost time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/.."
build=${1:-build-asan}

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized -Dman_pages=disabled -Dgpu_archs=90 </dev/null
fi
ninja -j"${NINJA_JOBS:-2}" -C "$build" </dev/null

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
# Only if a leak outside gpumem's control ever needs one; each entry must say why.
[ -f "$here/lsan.supp" ] && export LSAN_OPTIONS=suppressions=$here/lsan.supp:print_suppressions=0
exec "$here/run-tests.sh" "$build" </dev/null
