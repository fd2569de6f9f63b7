#!/usr/bin/env bash
# Configures BUILD_DIR exactly as the Debian package's build configures its
# own (debian/rules: dh_auto_configure, the options in debian/meson-args, the
# compiler and linker flags of dpkg-buildflags with the package's hardening),
# plus the meson options given after it. Then `ninja -C BUILD_DIR` builds
# what the package ships and whatever else those options add (CI adds the
# test suites and bench baselines), and
#   GPUMEM_BUILD_DIR=BUILD_DIR dpkg-buildpackage -b
# packages those objects without compiling them again (debian/rules).
#   tools/configure-package-build.sh BUILD_DIR [MESON_OPTION...]
# Needs debhelper (dh_auto_configure, dpkg-buildflags).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: tools/configure-package-build.sh BUILD_DIR [MESON_OPTION...]" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
dir=$1
shift
# The hardening debian/rules exports, read from there so the two cannot differ.
hardening=$(sed -n 's/^export DEB_BUILD_MAINT_OPTIONS *= *//p' debian/rules)
[ -n "$hardening" ] || { echo "configure-package-build.sh: no DEB_BUILD_MAINT_OPTIONS in debian/rules" >&2; exit 1; }
export DEB_BUILD_MAINT_OPTIONS=$hardening
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
mapfile -t package_args <debian/meson-args
exec dh_auto_configure --builddirectory="$dir" -- "${package_args[@]}" "$@"
