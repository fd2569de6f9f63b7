#!/usr/bin/env bash
# Installs the Debian packages gpumem builds with (and, with --ci, what CI's
# checks add), as root directly or through sudo as any other user, on a fresh
# Debian 12 machine with the CUDA toolkit in /usr/local/cuda. The README's
# quick start and .ci/run both call it, so the list lives here only.
#   tools/install-deps.sh [--ci]
set -euo pipefail

# cmake: Meson finds doctest, which ships no pkg-config file, through CMake.
# scdoc builds the man page; groff-base renders it in test_docs, which fails
# on any troff warning (a line troff cannot break).
build=(meson ninja-build pkg-config cmake g++ libcli11-dev libspdlog-dev libfmt-dev doctest-dev nlohmann-json3-dev zlib1g-dev scdoc
       groff-base)
# CI's further stages: clang with its sanitizer runtime (sanitized build,
# fuzzing), clang-tidy and cppcheck (static analysis), python3 (fuzz target
# of the snapshot converter, the Slurm test's checker), zsh and fish (the
# completions test runs fish's completions and checks zsh's syntax; bash is
# always there), slurm-wlm and munge (tests/slurm-test.sh starts a single-node
# cluster of its own, on its own key, socket and ports, whatever the packages'
# services do), prometheus and python3-prometheus-client (promtool and the
# Python parser: tests/prometheus-check.sh validates --format prometheus with
# both, the Go parser Prometheus runs and an independent one), debhelper,
# lintian, man-db and bash-completion (tests/package-test.sh builds, lints
# and installs the Debian package, then asks man and each shell where its
# files are), systemd (systemd-analyze verify of the units), chromium
# (test_plots_browser renders every kind of --plot picture headless and
# checks it by its DOM).
ci=(clang libclang-rt-14-dev clang-tidy cppcheck python3 zsh fish slurm-wlm munge prometheus python3-prometheus-client
    debhelper lintian man-db bash-completion systemd chromium)

packages=("${build[@]}")
case "${1:-}" in
  --ci) packages+=("${ci[@]}") ;;
  "") ;;
  *) echo "usage: tools/install-deps.sh [--ci]" >&2; exit 2 ;;
esac

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null; then
    echo "tools/install-deps.sh: run as root, or install sudo" >&2
    exit 1
  fi
  as_root=(sudo)
  # In CI nobody can type a password.
  [ -t 0 ] || as_root=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
# A run stopped while dpkg worked (a CI job killed during the package stage's
# apt-get install) leaves dpkg "interrupted", and apt then refuses everything
# until someone finishes it: finish it here, as apt's own message says to.
if [ -n "$(dpkg --audit 2>/dev/null)" ] || [ -n "$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ]; then
  echo "tools/install-deps.sh: dpkg was interrupted; finishing it with dpkg --configure -a" >&2
  "${as_root[@]}" dpkg --configure -a
fi
"${as_root[@]}" apt-get update -q
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${packages[@]}"
