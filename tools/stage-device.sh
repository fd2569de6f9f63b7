#!/usr/bin/env bash
# Copies what a run on the GPU machine needs (the gpumem binary and the test
# executables, not object files) from a build directory into .device/, which
# git ignores and the device tool carries:  carry: [".device"].
# On the device:  tests/run-tests.sh .device
set -eu
build=${1:-build}
dest=.device
rm -rf "$dest"
mkdir -p "$dest/tests"
cp "$build/gpumem" "$dest/"
for f in "$build"/tests/test_*; do
  [ -f "$f" ] && [ -x "$f" ] && cp "$f" "$dest/tests/"
done
for f in "$build"/bench/*; do
  [ -f "$f" ] && [ -x "$f" ] && { mkdir -p "$dest/bench"; cp "$f" "$dest/bench/"; }
done
strip --strip-debug "$dest/gpumem" "$dest"/tests/* 2>/dev/null || true
du -sh "$dest"
