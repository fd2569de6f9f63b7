#!/usr/bin/env bash
# Copies what a run on the GPU machine needs (the gpumem binary and the test
# executables, not object files) from a build directory into .device/, which
# git ignores and the device tool carries:  carry: [".device"].
# On the device:  PYTHONPATH=$PWD/.device/py tests/run-tests.sh .device
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
# python3's prometheus_client (pure Python), so that tests/prometheus-check.sh
# validates real expositions there (with decorator, which it imports):
# PYTHONPATH=.device/py on the device.
for d in /usr/lib/python3/dist-packages/prometheus_client /usr/lib/python3/dist-packages/decorator.py; do
  [ -e "$d" ] && { mkdir -p "$dest/py"; cp -r "$d" "$dest/py/"; rm -rf "$dest/py/prometheus_client/__pycache__"; }
done
strip --strip-all "$dest/gpumem" "$dest"/tests/* "$dest"/bench/* 2>/dev/null || true  # the carry limit is 64 MiB
du -sh "$dest"
