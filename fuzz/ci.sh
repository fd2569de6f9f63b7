#!/usr/bin/env bash
# CI: the short fuzz run (about a minute in all: 5 targets x 8 s, plus the
# build). Builds the fuzz targets with clang in BUILD_DIR (default build-fuzz)
# and runs fuzz/run.sh on them; exits non-zero on a build failure or a finding.
#   fuzz/ci.sh [BUILD_DIR] [SECONDS_PER_TARGET]
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
seconds=${2:-8}
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=false -Dman_pages=disabled -Dcompletions=false >/dev/null
fi
ninja -j"${NINJA_JOBS:-1}" -C "$build" fuzz >/dev/null
fuzz/run.sh "$build" "$seconds"
