#!/usr/bin/env bash
# The deployment files of deploy/ and examples/, without installing them:
#   - gpumem-check.service's own command lines (ExecStart, ExecStartPost),
#     read from the unit, run against a fake gpumem (a verdict, a slow
#     writer, a crash) and the real one (no GPU here: exit 3), while a reader
#     polls the textfile as node_exporter would: every read is a whole
#     exposition, no temporary file is left, a failed run keeps the last
#     good metrics with its own gpumem_run_exit_status;
#   - systemd-analyze verify of the units (skipped where systemd is absent);
#   - promtool check rules of the example alert rules (skipped without promtool);
#   - deploy/kubernetes: the DaemonSet, its kustomization and NPD's
#     configuration fit together (skipped without python3's yaml); the
#     configuration's own fields are checked by test_check (test_check_npd.cpp).
# Ends with "N passed, N failed, N skipped" like every CI stage.
#   tests/deploy-test.sh [BUILD_DIR]
set -u
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
gpumem=$(cd "$build" && pwd)/gpumem
passed=0 failed=0 skipped=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }
skip() { skipped=$((skipped + 1)); echo "skipped: $*"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

unit=$here/deploy/gpumem-check.service.in
helper=$here/deploy/gpumem-textfile
# The service's command lines, as systemd would run them here.
exec_line() { sed -n "s/^$1=+\{0,1\}//p" "$unit" | sed "s|@HELPER_DIR@|${helper%/*}|g"; }
start=$(exec_line ExecStart)
post=$(exec_line ExecStartPost)
state=$work/state textfiles=$work/textfile
mkdir -p "$state" "$textfiles"
start=${start//\/var\/lib\/gpumem/$state}
post=${post//\/var\/lib\/gpumem/$state}
post=${post//\$\{GPUMEM_TEXTFILE_DIR\}/$textfiles}
prom=$textfiles/gpumem.prom

# A fake gpumem: MODE verdict (exit $FAKE_STATUS after a whole exposition,
# written slowly in pieces), or crash (half an exposition, then killed).
fake=$work/fake-gpumem
cat >"$fake" <<'EOF'
#!/bin/sh
echo '# HELP gpumem_check_verdict The verdict.'
sleep 0.02
echo '# TYPE gpumem_check_verdict gauge'
echo "gpumem_check_verdict{verdict=\"pass\"} ${FAKE_PASS:-1}"
[ "${FAKE_MODE:-verdict}" = crash ] && kill -9 $$
sleep 0.02
echo '# HELP gpumem_run_success Whether the run succeeded.'
echo '# TYPE gpumem_run_success gauge'
echo "gpumem_run_success{command=\"check\"} $([ "${FAKE_STATUS:-0}" -eq 0 ] && echo 1 || echo 0)"
echo '# HELP gpumem_run_exit_status The exit status.'
echo '# TYPE gpumem_run_exit_status gauge'
echo "gpumem_run_exit_status{command=\"check\"} ${FAKE_STATUS:-0}"
exit "${FAKE_STATUS:-0}"
EOF
chmod +x "$fake"

run_service() { eval "$start" && eval "$post"; }
value() { sed -n "s/^$1 //p" "$prom"; }
whole() { tail -n 1 "$1" | grep -q '^gpumem_run_exit_status{'; }

[ -n "$start" ] && [ -n "$post" ] && ok "the unit has ExecStart and ExecStartPost" || bad "no ExecStart/ExecStartPost in $unit"

# A reader as node_exporter: every read must be a whole exposition.
reader() {
  local torn=0
  while [ ! -f "$work/stop" ]; do
    for f in "$state/gpumem.prom" "$prom"; do  # what run writes, and what publish writes
      [ -f "$f" ] && cp "$f" "$work/read" 2>/dev/null && ! whole "$work/read" && torn=$((torn + 1))
    done
  done
  echo "$torn" >"$work/torn"
}
reader &
reader_pid=$!
inodes=()
for i in $(seq 1 20); do
  GPUMEM=$fake FAKE_STATUS=$(( i % 2 ? 0 : 7 )) run_service 2>/dev/null || bad "run $i of the service failed"
  inodes+=("$(stat -c %i "$prom")")
done
touch "$work/stop"
wait "$reader_pid"
[ "$(cat "$work/torn")" = 0 ] && ok "20 runs: the reader never saw half a file" || bad "the reader saw $(cat "$work/torn") torn files"
[ "$(printf '%s\n' "${inodes[@]}" | sort -u | wc -l)" -gt 1 ] && ok "each run renames a new file into place" || bad "the textfile was rewritten in place"
leftover=$(find "$state" "$textfiles" -name '.gpumem-textfile.*' | wc -l)
[ "$leftover" -eq 0 ] && ok "no temporary file is left" || bad "$leftover temporary files left"
[ "$(stat -c %a "$prom")" = 644 ] && ok "the textfile is readable by node_exporter (0644)" || bad "mode $(stat -c %a "$prom")"

GPUMEM=$fake FAKE_STATUS=7 FAKE_PASS=0 run_service 2>/dev/null
[ "$(value 'gpumem_run_exit_status{command="check"}')" = 7 ] && [ "$(value 'gpumem_check_verdict{verdict="pass"}')" = 0 ] &&
  ok "a failed check (exit 7) is a verdict: its metrics replace the file" || bad "exit 7 did not replace the file"
GPUMEM=$fake FAKE_STATUS=0 run_service 2>/dev/null

# No GPU here: the real gpumem exits 3. The last good metrics stay, with exit 3.
if [ -x "$gpumem" ]; then
  GPUMEM=$gpumem run_service 2>"$work/err"
  status=$(value 'gpumem_run_exit_status{command="check"}')
  if [ "$status" = 0 ] || [ "$status" = 7 ]; then
    # A GPU machine: the real check's own metrics replace the fake's.
    grep -q '^gpumem_check_verdict{gpu=' "$prom" && [ "$(value 'gpumem_run_success{command="check"}')" = $((status == 0)) ] &&
      ok "gpumem check gave a verdict (exit $status): its metrics replace the file" || bad "real run: $(head -c 2000 "$prom")"
  else
    [ "$(value 'gpumem_check_verdict{verdict="pass"}')" = 1 ] && [ "$(value 'gpumem_run_success{command="check"}')" = 0 ] &&
      [ -n "$status" ] && whole "$prom" &&
      ok "gpumem check without a verdict (exit $status): the last good metrics stay, with its exit status" ||
      bad "failed run: $(cat "$prom")"
    grep -q 'keeping the last good metrics' "$work/err" && ok "the failed run says so on stderr (the journal)" || bad "no stderr line"
    [ "$(grep -c '^gpumem_run_exit_status' "$prom")" = 1 ] && ok "one gpumem_run_exit_status sample" || bad "run metrics repeated"
  fi
else
  skip "no gpumem in $build"
fi

# A crash: no verdict, half an exposition; the last good file stays whole.
GPUMEM=$fake FAKE_MODE=crash run_service 2>/dev/null
whole "$prom" && [ "$(value 'gpumem_run_exit_status{command="check"}')" = 137 ] &&
  ok "a killed run (137) keeps the last good metrics and reports 137" || bad "crash: $(cat "$prom")"

# The first run ever fails: the file holds what that run knew.
rm -f "$prom" "$state/gpumem.prom"
GPUMEM=$fake FAKE_MODE=crash run_service 2>/dev/null
whole "$prom" && [ "$(value 'gpumem_run_success{command="check"}')" = 0 ] &&
  ok "a first run that fails still writes gpumem_run_success 0" || bad "first failed run: $(cat "$prom" 2>&1)"

# publish passes gpumem_* lines only, whatever the unprivileged side wrote.
printf 'root:x:0:0\ngpumem_run_success{command="check"} 1\ngpumem_run_exit_status{command="check"} 0\n' >"$state/gpumem.prom"
eval "$post"
! grep -q root "$prom" && ok "publish copies gpumem_* lines only" || bad "publish copied a foreign line"
ln -sf /etc/passwd "$state/link.prom"
"$helper" publish "$state/link.prom" "$textfiles/x.prom" 2>/dev/null && bad "publish followed a symlink" || ok "publish refuses a symlink"

# systemd's own check of the units, with the helper where the unit says.
if command -v systemd-analyze >/dev/null; then
  sed "s|@HELPER_DIR@|${helper%/*}|g" "$unit" >"$work/gpumem-check.service"
  cp "$here/deploy/gpumem-check.timer" "$work/"
  if out=$(cd "$work" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./gpumem-check.service ./gpumem-check.timer 2>&1) && [ -z "$out" ]; then
    ok "systemd-analyze verify: the service and the timer"
  else
    bad "systemd-analyze verify: $out"
  fi
  grep -q '^OnUnitActiveSec=5min' "$here/deploy/gpumem-check.timer" && ok "the timer runs every 5 minutes (as docs/deploy.md says)" ||
    bad "the timer's interval changed: update docs/deploy.md and the stale alert"
else
  skip "systemd-analyze not installed"
fi

if command -v promtool >/dev/null; then
  promtool check rules "$here/examples/prometheus-gpumem-alerts.yml" >/dev/null 2>"$work/promtool" &&
    ok "promtool check rules examples/prometheus-gpumem-alerts.yml" || bad "promtool: $(cat "$work/promtool")"
else
  skip "promtool not installed"
fi

# deploy/kubernetes: what the DaemonSet needs of the host and of NPD's
# configuration, read as kubectl would (no cluster here).
k8s=$here/deploy/kubernetes
if python3 -c 'import yaml' 2>/dev/null; then
  if out=$(python3 - "$k8s" 2>&1 <<'EOF'
import json, sys, yaml
k8s = sys.argv[1]
docs = list(yaml.safe_load_all(open(k8s + "/gpumem-npd.yaml")))
kinds = {d["kind"]: d for d in docs}
assert set(kinds) == {"ServiceAccount", "ClusterRoleBinding", "DaemonSet"}, kinds.keys()
kust = yaml.safe_load(open(k8s + "/kustomization.yaml"))
assert kust["resources"] == ["gpumem-npd.yaml"], kust
generated = {g["name"]: g["files"] for g in kust["configMapGenerator"]}
pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
assert pod["hostPID"] is True, "hostPID"
assert pod["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]
assert kinds["ClusterRoleBinding"]["roleRef"]["name"] == "system:node-problem-detector"
volumes = {v["name"]: v for v in pod["volumes"]}
(npd,) = pod["containers"]
assert npd["securityContext"]["privileged"] is True, "privileged"
mounts = {m["mountPath"]: m["name"] for m in npd["volumeMounts"]}
# NPD's configuration: the flag names the file of the ConfigMap made from gpumem-monitor.json.
flag = [a for a in npd["command"] if a.startswith("--config.custom-plugin-monitor=")]
assert len(flag) == 1, npd["command"]
folder, name = flag[0].split("=", 1)[1].rsplit("/", 1)
config_volume = volumes[mounts[folder]]
assert generated[config_volume["configMap"]["name"]] == [name], (generated, name)
config = json.load(open(k8s + "/" + name))
# The rule's command is in the image (the Debian package's /usr/bin/gpumem).
assert config["rules"][0]["path"] == "/usr/bin/gpumem"
# The lock folder is the host's /run/gpumem, sticky and writable by all.
assert volumes[mounts["/run/gpumem"]]["hostPath"]["path"] == "/run/gpumem"
init = pod["initContainers"][0]
assert init["command"] == ["chmod", "1777", "/run/gpumem"], init["command"]
assert {m["mountPath"]: m["name"] for m in init["volumeMounts"]}["/run/gpumem"] == mounts["/run/gpumem"]
# The host's /dev, and the driver's two libraries alone on LD_LIBRARY_PATH.
assert volumes[mounts["/dev"]]["hostPath"]["path"] == "/dev"
env = {e["name"]: e.get("value") for e in npd["env"]}
assert "NODE_NAME" in env
lib = env["LD_LIBRARY_PATH"]
for so in ("libcuda.so.1", "libnvidia-ml.so.1"):
    host = volumes[mounts[lib + "/" + so]]["hostPath"]
    assert host["path"].endswith("/" + so) and host["type"] == "File", host
EOF
  ); then
    ok "deploy/kubernetes: DaemonSet, kustomization and NPD configuration agree"
  else
    bad "deploy/kubernetes: $out"
  fi
else
  skip "python3 yaml not installed: deploy/kubernetes not read"
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
