#!/usr/bin/env bash
# The Debian package, as an operator gets it: built with `dpkg-buildpackage
# -b` from a clean export of the checkout's HEAD (what the package ships
# only: no tests, no bench), linted, installed with `apt-get install
# ./gpumem_*.deb`, checked where each file must be, then removed and purged,
# leaving nothing behind. Needs root (or sudo without a password) for apt.
# Ends with "N passed, N failed, N skipped" like every CI stage.
#   tests/package-test.sh
#   GPUMEM_GPU_ARCHS (default 90): the package's SASS. CI's tests build has
#   compiled the kernels for every architecture already; a release build
#   leaves it unset in debian/rules (auto: all of them).
#   GPUMEM_DEB=PATH: check that package instead of building one (the build's
#   own checks then count as skipped).
#   GPUMEM_BUILD_DIR=DIR: package the objects of DIR, a build directory
#   configured by tools/configure-package-build.sh and built (CI's tests
#   stage), instead of compiling them again (debian/rules); GPUMEM_GPU_ARCHS
#   is then DIR's own.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
passed=0 failed=0 skipped=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }
finish() { echo "$passed passed, $failed failed, $skipped skipped"; [ "$failed" -eq 0 ]; exit; }
as_root=()
[ "$(id -u)" -ne 0 ] && as_root=(sudo -n)
export DEBIAN_FRONTEND=noninteractive
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -n "${GPUMEM_DEB:-}" ]; then
  cp "$GPUMEM_DEB" "$work/" || { bad "no $GPUMEM_DEB"; finish; }
  deb=$work/$(basename "$GPUMEM_DEB")
  skipped=$((skipped + 2)); echo "skipped: dpkg-buildpackage (GPUMEM_DEB given)"
else
  # A clean checkout: HEAD's files only, no build folder or stray file.
  if git -C "$here" rev-parse --verify -q HEAD >/dev/null; then
    git -C "$here" archive --format=tar --prefix=gpumem/ HEAD | tar -x -C "$work"
  else
    mkdir "$work/gpumem" && (cd "$here" && tar --exclude='./build*' --exclude='./obj-*' -cf - .) | tar -x -C "$work/gpumem"
  fi
  built_dir=
  if [ -n "${GPUMEM_BUILD_DIR:-}" ]; then
    built_dir=$(cd "$GPUMEM_BUILD_DIR" 2>/dev/null && pwd) && [ -f "$built_dir/build.ninja" ] ||
      { bad "GPUMEM_BUILD_DIR=$GPUMEM_BUILD_DIR is not a configured build directory"; finish; }
    # Configured as the package configures (tools/configure-package-build.sh), or its objects are not the package's.
    python3 -c 'import json, sys; o = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))}
sys.exit(not (o["buildtype"] == "plain" and o["prefix"] == "/usr"))' "$built_dir/meson-info/intro-buildoptions.json" &&
      grep -q -e '-D_FORTIFY_SOURCE=2' "$built_dir/compile_commands.json" &&
      ok "$GPUMEM_BUILD_DIR was configured as a package build" ||
      { bad "$GPUMEM_BUILD_DIR was not configured by tools/configure-package-build.sh"; finish; }
  fi
  start=$SECONDS
  if (cd "$work/gpumem" && DEB_BUILD_OPTIONS="nocheck parallel=${NINJA_JOBS:-2}" GPUMEM_GPU_ARCHS=${GPUMEM_GPU_ARCHS:-90} \
        GPUMEM_BUILD_DIR=$built_dir dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1; then
    ok "dpkg-buildpackage -b ($((SECONDS - start)) s${built_dir:+, the objects of $GPUMEM_BUILD_DIR})"
  else
    tail -n 40 "$work/build.log"
    bad "dpkg-buildpackage -b"
    finish
  fi
  deb=$(ls "$work"/gpumem_*.deb)
  if [ -n "$built_dir" ]; then
    # Nothing compiled again: ninja found the objects up to date.
    grep -q 'ninja: no work to do' "$work/build.log" && ! grep -q 'Compiling C++' "$work/build.log" &&
      ok "the package build compiled nothing again" || bad "the package build compiled again"
  else
    grep -q -- '-Dtests=false' "$work/build.log" && grep -q -- '-Dbench=false' "$work/build.log" &&
      ok "the package build compiles no test suite and no bench" || bad "the package build compiled tests or bench"
  fi

fi

# lintian: no error; the warnings and infos it gives are listed in docs/deploy.md.
lintian --fail-on error --tag-display-limit 0 "$deb" >"$work/lintian" 2>&1
lint=$?
sed 's/^/  lintian: /' "$work/lintian"
[ "$lint" -eq 0 ] && ok "lintian: no error ($(grep -c '^W:' "$work/lintian") warnings)" || bad "lintian found errors"

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/contents"
for path in /usr/bin/gpumem /usr/share/man/man1/gpumem.1.gz /usr/share/bash-completion/completions/gpumem \
  /usr/share/zsh/vendor-completions/_gpumem /usr/share/fish/vendor_completions.d/gpumem.fish \
  /usr/share/doc/gpumem/examples/slurm-prolog.sh /usr/share/doc/gpumem/examples/prometheus-gpumem-alerts.yml \
  /lib/systemd/system/gpumem-check.service /lib/systemd/system/gpumem-check.timer /usr/libexec/gpumem/gpumem-textfile \
  /usr/lib/tmpfiles.d/gpumem.conf; do
  grep -qx "$path" "$work/contents" && ok "ships $path" || bad "does not ship $path"
done
shipped_extra=$(grep -E '/(test_[a-z_]+|fuzz_[a-z_]+|raw_[a-z_]+|nvml_probe|fill_verify_kernels|max_batch_speed|fast_json_speed)$' "$work/contents" || true)
[ -z "$shipped_extra" ] && ok "ships no test suite, fuzz target or bench baseline" || bad "ships $shipped_extra"
dpkg-deb -f "$deb" Depends | grep -q -i cuda && bad "depends on a CUDA package" || ok "no CUDA package in Depends: $(dpkg-deb -f "$deb" Depends)"

# A run stopped between install and purge leaves gpumem installed, and apt
# would then not reinstall a package of the same version: start from none.
if [ -n "$(dpkg-query -W -f='${db:Status-Abbrev}' gpumem 2>/dev/null | grep -v '^[up]n')" ]; then
  echo "note: gpumem was installed before this test (an earlier run stopped?); purging it first"
  "${as_root[@]}" apt-get purge -y -q gpumem >"$work/apt.log" 2>&1 || { tail -n 20 "$work/apt.log"; bad "apt-get purge of the gpumem installed before"; finish; }
fi
(cd "$work" && "${as_root[@]}" apt-get install -y -q --no-install-recommends "./$(basename "$deb")") >"$work/apt.log" 2>&1 &&
  ok "apt-get install ./$(basename "$deb")" || { tail -n 20 "$work/apt.log"; bad "apt-get install"; finish; }

version=$(/usr/bin/gpumem --version 2>&1)
[[ $version == *"$(dpkg-deb -f "$deb" Version | sed 's/-.*//')"* ]] && ok "gpumem --version: $version" || bad "gpumem --version: $version"
# Nothing but the C/C++ runtime: cudart is static, the driver's libraries are dlopened.
libs=$(ldd /usr/bin/gpumem | awk '{print $1}' | grep -v -E '^(linux-vdso|/lib(64)?/ld-linux[-a-z0-9_]*|libc|libm|libstdc\+\+|libgcc_s|libdl|libpthread|librt)\.so' || true)
[ -z "$libs" ] && ok "ldd: C and C++ runtime only" || bad "ldd shows $libs"
man=$(man -w gpumem 2>&1) && ok "man -w gpumem: $man" || bad "man -w gpumem: $man"
# The lock directory every user's gpumem shares, made by the package's
# tmpfiles.d entry at install (dh_installtmpfiles) as at every boot.
if command -v systemd-tmpfiles >/dev/null; then
  mode=$(stat -c '%a %U' /run/gpumem 2>&1)
  [ "$mode" = "1777 root" ] && ok "/run/gpumem is made at install, sticky and writable by all" || bad "/run/gpumem: $mode"
else
  skipped=$((skipped + 1)); echo "skipped: systemd-tmpfiles is not installed"
fi

# Each shell finds the completions where it looks by itself.
if [ -f /usr/share/bash-completion/bash_completion ]; then
  bash -c 'source /usr/share/bash-completion/bash_completion; __load_completion gpumem && complete -p gpumem' >/dev/null 2>&1 &&
    ok "bash-completion loads gpumem's completion" || bad "bash-completion does not find gpumem's"
else
  skipped=$((skipped + 1)); echo "skipped: bash-completion is not installed"
fi
if command -v zsh >/dev/null; then
  zsh -fc 'for d in $fpath; do [[ -f $d/_gpumem ]] && exit 0; done; exit 1' && ok "_gpumem is in zsh's default \$fpath" ||
    bad "_gpumem is not in zsh's \$fpath"
else
  skipped=$((skipped + 1)); echo "skipped: zsh is not installed"
fi
if command -v fish >/dev/null; then
  fish -c 'complete -C"gpumem rep"' 2>/dev/null | grep -q '^report' && ok "fish completes 'gpumem rep' to report" ||
    bad "fish does not complete gpumem"
else
  skipped=$((skipped + 1)); echo "skipped: fish is not installed"
fi

# Installed, not enabled; the units verify where they are installed.
if [ -z "$(find /etc/systemd/system -name 'gpumem-check*' 2>/dev/null)" ]; then
  ok "gpumem-check.timer and .service are not enabled"
else
  bad "enabled: $(find /etc/systemd/system -name 'gpumem-check*')"
fi
out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify /lib/systemd/system/gpumem-check.service /lib/systemd/system/gpumem-check.timer 2>&1)
[ -z "$out" ] && ok "systemd-analyze verify of the installed units" || bad "systemd-analyze verify: $out"

fixtures=$here/tests/fixtures/report
out=$(/usr/bin/gpumem report "$fixtures/check-node1.json" 2>&1) && [[ $out == *"verdict: pass"* ]] &&
  ok "gpumem report over a fixture" || bad "gpumem report: $out"
mkdir "$work/docs" && cp "$fixtures/check-node1.json" "$work/docs/" && gzip -c "$fixtures/info.jsonl" >"$work/docs/info.jsonl.gz"
out=$(/usr/bin/gpumem report "$work/docs" 2>&1) && [[ $out == *"verdict: pass"* ]] &&
  ok "gpumem report DIR with a .gz in it" || bad "gpumem report DIR: $out"

"${as_root[@]}" apt-get remove -y -q gpumem >"$work/apt.log" 2>&1 && ok "apt-get remove gpumem" || bad "apt-get remove"
left=$(while read -r p; do [ -f "$p" ] || [ -L "$p" ] && echo "$p"; done <"$work/contents")
[ -z "$left" ] && ok "apt-get remove leaves none of the package's files" || bad "left after remove: $left"
"${as_root[@]}" apt-get purge -y -q gpumem >"$work/apt.log" 2>&1 && ok "apt-get purge gpumem" || bad "apt-get purge"
state=$(dpkg-query -W -f='${db:Status-Abbrev}' gpumem 2>/dev/null || true)
[ -z "$state" ] || [[ $state == u* ]] || [[ $state == p* ]] && ok "dpkg knows nothing of gpumem after purge ('$state')" ||
  bad "dpkg still lists gpumem: $state"
[ ! -e /var/lib/gpumem ] && [ ! -e /usr/libexec/gpumem ] && [ ! -e /usr/share/doc/gpumem ] &&
  ok "no gpumem folder is left" || bad "a gpumem folder is left"
# deb-systemd-helper's records of the units (kept by remove, for a reinstall) go with purge.
left=$(find /var/lib/systemd /etc/systemd -name '*gpumem*' 2>/dev/null)
[ -z "$left" ] && ok "no systemd state of the units is left after purge" || bad "left after purge: $left"
finish
