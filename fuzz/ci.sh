#!/usr/bin/env bash
# CI: the short fuzz run (about a minute in all: each target for SECONDS,
# default 10) on the sanitized clang build that tests/run-sanitized.sh makes
# (default build-san); sets it up and builds the targets when needed. The last
# line is fuzz/run.sh's "N passed, N failed, 0 skipped"; exits non-zero on a
# build failure or a finding.
#   fuzz/ci.sh [BUILD_DIR] [SECONDS_PER_TARGET]
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-san}
seconds=${2:-10}
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=true -Dgpu_archs=90 \
    -Dman_pages=disabled -Dcompletions=false </dev/null >/dev/null
fi
ninja -j"${NINJA_JOBS:-2}" -C "$build" fuzz </dev/null >/dev/null
exec fuzz/run.sh "$build" "$seconds"
