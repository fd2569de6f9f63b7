#!/usr/bin/env bash
# gpumem under a real Slurm: a single-node cluster on localhost (munged,
# slurmctld and slurmd started here, as root, with every file in a temporary
# directory), then
#   - srun -n 2 gpumem info --json -d local: each rank writes one JSON
#     document stamped with its rank (origin), and the status this machine
#     gives outside Slurm (3 without a driver; 0 with GPUs, each rank on its
#     own GPU where there are two);
#   - srun -n 2 gpumem reuse-sim replay --json: a successful document per rank;
#   - srun -n 2 gpumem check --json -d local, the same (skipped, saying so,
#     where this gpumem has no check command yet);
#   - gpumem report over the ranks' documents: every rank listed, exit 7
#     when any is an error document (0 otherwise), one valid document;
#   - sbatch --wait on a job script that does the same into files, plus
#     gpumem in the batch script's own shell (rank 0, no counts), and the
#     report over them, made inside the job;
#   - examples/slurm-prolog.sh against this cluster's slurmctld: a check
#     that fails here (no GPU: exit 3) drains the node with gpumem's reason;
#     the node is then resumed.
# It installs nothing: tools/install-deps.sh --ci installs slurm-wlm and
# munge. Where they are missing or cannot start, every case counts as
# skipped and stderr says why. Every wait is bounded, and every daemon it
# started is stopped on exit, failure and Ctrl-C included.
#   tests/slurm-test.sh [BUILD_DIR]    (default: build; runs BUILD_DIR/gpumem)
# Last line: "N passed, N failed, N skipped". SLURM_TEST_KEEP=1 keeps the
# temporary directory (configuration, logs, documents).
set -u
readonly cases_total=14
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
passed=0 failed=0

summary() { echo "$passed passed, $failed failed, $((cases_total - passed - failed)) skipped"; }
# The summary line comes last, after cleanup's messages: .ci/run reads it
# from the last line of stdout and stderr together.
skip_all() {
  echo "tests/slurm-test.sh: skipped: $*" >&2
  cleanup
  summary
  exit 0
}
pass() { echo "PASS  $1"; passed=$((passed + 1)); }
fail() { echo "FAIL  $1: $2"; failed=$((failed + 1)); }

# Given to Slurm's commands only (sl), not exported: this script's own
# helpers then never carry it, and stop_leftovers finds this cluster's
# processes by it.
dir="" conf=""
sl() { SLURM_CONF=$conf "$@"; }

# bounded SECONDS LOG COMMAND...: a Slurm command with a time limit, its
# output in LOG, run in the background and waited for, so that a signal to
# this script stops the wait at once (bash runs traps only between
# foreground commands); cleanup ends it. (Redirecting the call itself would
# redirect the trap's messages too.)
child=""
bounded() {
  local limit=$1 log=$2
  shift 2
  SLURM_CONF=$conf timeout "$limit" "$@" >"$log" 2>&1 &
  child=$!
  wait "$child"
}

# stop_pids NAME...: SIGTERM to each daemon NAME ($dir/run/NAME.pid), then
# up to 10 s for all of them together, then SIGKILL to any left.
stop_pids() {
  local name pid pids=()
  for name in "$@"; do
    pid=$(cat "$dir/run/$name.pid" 2>/dev/null) || continue
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for _ in $(seq 50); do
    local alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    [ ${#alive[@]} -eq 0 ] && return 0
    pids=("${alive[@]}")
    sleep 0.2
  done
  echo "tests/slurm-test.sh: $* (pids ${pids[*]}) ignored SIGTERM for 10 s: killing them" >&2
  kill -KILL "${pids[@]}" 2>/dev/null
}

# Processes of this cluster that outlive slurmd (a step's slurmstepd, a task
# after a timeout) carry this cluster's SLURM_CONF: found by it, so that
# nothing else is touched.
stop_leftovers() {
  local f p pids=() names=()
  while read -r f; do
    p=${f#/proc/}
    p=${p%/environ}
    pids+=("$p")
    names+=("$p:$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | head -c 60)")
  done < <(grep -lzxF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null)
  [ ${#pids[@]} -eq 0 ] && return 0
  echo "tests/slurm-test.sh: killing leftover processes of this cluster: ${names[*]}" >&2
  kill -KILL "${pids[@]}" 2>/dev/null
}

show_logs() {
  local f
  for f in "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir/munge/munged.log"; do
    [ -s "$f" ] || continue
    echo "--- last lines of $f" >&2
    tail -n 15 "$f" >&2
  done
}

cleanup() {
  trap - EXIT INT TERM
  [ -n "${dir:-}" ] || return 0
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null  # timeout passes it on to srun or sbatch
  stop_pids slurmd slurmctld
  stop_leftovers
  stop_pids munged
  if [ "${SLURM_TEST_KEEP:-0}" = 1 ]; then
    echo "tests/slurm-test.sh: kept $dir" >&2
  else
    rm -rf "$dir"
  fi
}

# Refused or skipped before anything starts.
if [ "$(id -u)" -ne 0 ]; then
  echo "tests/slurm-test.sh: must run as root: it starts munged, slurmctld and slurmd, and slurmd launches tasks as the submitting user" >&2
  exit 2
fi
gpumem=$(cd "$build" 2>/dev/null && pwd)/gpumem
if [ ! -x "$gpumem" ]; then
  echo "tests/slurm-test.sh: no gpumem in '$build' (build it first)" >&2
  exit 2
fi
for tool in munged munge unmunge slurmctld slurmd srun sbatch sinfo scontrol python3; do
  command -v "$tool" >/dev/null || skip_all "$tool not found (tools/install-deps.sh --ci installs slurm-wlm, munge and python3)"
done

# A run inside another Slurm job or MPI launch must not leak its variables
# into this cluster's clients and tasks.
for v in $(compgen -e); do
  case $v in
    SLURM_* | OMPI_COMM_WORLD_* | MV2_COMM_WORLD_* | PMI_* | LOCAL_RANK | RANK | LOCAL_WORLD_SIZE | WORLD_SIZE | PBS_JOBID | LSB_JOBID) unset "$v" ;;
  esac
done

start_time=$SECONDS
dir=$(mktemp -d /tmp/gpumem-slurm.XXXXXX) || skip_all "mktemp failed"
# munged wants every directory above its socket searchable by all.
chmod 755 "$dir"
mkdir -p "$dir/munge" "$dir/run" "$dir/state" "$dir/spool" "$dir/log" "$dir/out"
chmod 700 "$dir/munge"
chmod 755 "$dir/run" "$dir/out"
conf=$dir/slurm.conf
trap cleanup EXIT
trap 'echo "tests/slurm-test.sh: interrupted" >&2; exit 130' INT TERM

# start_munge: a key of our own and munged on a socket in $dir.
start_munge() {
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$dir/munge/munge.key" || return 1
  munged --key-file="$dir/munge/munge.key" --socket="$dir/run/munge.socket" --pid-file="$dir/run/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" || return 1
  timeout 10 munge -n -S "$dir/run/munge.socket" | timeout 10 unmunge -S "$dir/run/munge.socket" >/dev/null
}

# Two TCP ports free now on 127.0.0.1 (a real Slurm on the machine keeps its own).
free_ports() {
  python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])'
}

write_config() {
  local node=$1 ctld_port=$2 slurmd_port=$3
  cat >"$conf" <<EOF
# A throwaway single-node cluster for tests/slurm-test.sh.
ClusterName=gpumemtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/run/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups and no systemd in a container: processes tracked by /proc,
# tasks neither bound nor confined, no accounting.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
MailProg=/bin/true
# Four CPUs whatever the machine has, so that -n 2 fits on a 1-core runner.
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=5 State=UP
EOF
  # slurmd loads a cgroup plugin even when nothing uses cgroups. Slurm 22.05
  # knows no "disabled", and autodetection picks cgroup/v2 on a v2-only host,
  # which wants systemd; cgroup/v1 touches no cgroup until a plugin asks for
  # one, and none here does.
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
}

# wait_idle NODE SECONDS: until sinfo says the node is idle.
wait_idle() {
  local state=""
  for _ in $(seq $(($2 * 2))); do
    state=$(sl timeout 10 sinfo -h -n "$1" -o %T 2>/dev/null)
    [ "$state" = idle ] && return 0
    sleep 0.5
  done
  echo "tests/slurm-test.sh: node $1 not idle after $2 s (state '${state:-unknown}')" >&2
  return 1
}

start_cluster() {
  local node ports
  node=$(hostname -s)
  start_munge || { show_logs; skip_all "munged did not start or does not answer (see its log above)"; }
  ports=$(free_ports) || skip_all "no free TCP port for slurmctld and slurmd"
  # shellcheck disable=SC2086
  write_config "$node" $ports
  sl slurmctld -i -f "$conf" || { show_logs; skip_all "slurmctld did not start (see its log above)"; }
  sl slurmd -f "$conf" -N "$node" || { show_logs; skip_all "slurmd did not start (see its log above)"; }
  wait_idle "$node" 60 || { show_logs; skip_all "the node did not come up (see the logs above)"; }
  echo "slurm-test: cluster up in $((SECONDS - start_time)) s ($(slurmctld -V), node $node, ports $ports)"
}

# The checker of one rank's document: one JSON document, the expected
# status, the origin of an srun task or of the batch shell. Prints the job id
# and the device's UUID (or -) when it passes, the reason when not.
cat >"$dir/check.py" <<'EOF'
import json, sys
path, status, rank, world, job, host = sys.argv[1:7]
try:
    with open(path) as f:
        doc = json.load(f)  # one document: anything after it is an error
except (OSError, ValueError) as e:
    sys.exit(f"{path}: not one JSON document: {e}")
def need(cond, what):
    if not cond:
        sys.exit(f"{path}: {what}: {json.dumps(doc)[:600]}")
need(isinstance(doc, dict) and doc.get("tool") == "gpumem", "not a gpumem document")
if int(status) == 0:
    need(doc.get("ok") is True and "error" not in doc, "expected success")
else:
    need(doc.get("ok") is False and doc.get("error", {}).get("status") == int(status), f"expected error status {status}")
o = doc.get("origin")
need(isinstance(o, dict), "no origin")
need(o.get("host") == host, f"origin.host is not {host}")
need(o.get("launcher") == "slurm", "origin.launcher is not slurm")
need(o.get("rank") == int(rank) and o.get("local_rank") == int(rank), f"origin is not rank {rank}")
if world == "none":
    need("world_size" not in o, "origin.world_size in the batch shell")
else:
    need(o.get("world_size") == int(world), f"origin.world_size is not {world}")
if job == "any":
    need(str(o.get("job_id", "")).isdigit(), "origin.job_id is no Slurm job id")
else:
    need(o.get("job_id") == job, f"origin.job_id is not {job}")
devices = doc.get("devices") or []
if int(status) == 0 and "devices" in doc:
    need(len(devices) == 1, "-d local gave other than one device")
print(o.get("job_id"), devices[0].get("uuid", "-") if devices else "-")
EOF

# The checker of a report over rank documents: REPORT STATUS INPUT...: one
# report document, exit 7 when an input is an error document (else 0),
# every input counted and every rank listed. Prints nothing when it passes.
cat >"$dir/report.py" <<'EOF'
import json, sys
path, status, inputs = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    with open(path) as f:
        rep = json.load(f)
    docs = [json.load(open(p)) for p in inputs]
except (OSError, ValueError) as e:
    sys.exit(f"{path}: not one JSON document: {e}")
def need(cond, what):
    if not cond:
        sys.exit(f"{path}: {what}: {json.dumps(rep)[:600]}")
need(rep.get("tool") == "gpumem" and rep.get("command") == "report", "not a report document")
need(len(inputs) >= 2, f"only {len(inputs)} documents to merge")
failing = any(not d["ok"] for d in docs)
need(status == str(7 if failing else 0), f"exit {status}, expected {7 if failing else 0}")
need(rep["ok"] is (not failing) and rep["verdict"] == ("fail" if failing else "pass"), "ok/verdict")
need(len(rep["documents"]) == len(docs), f"{len(docs)} documents read")
need({d["origin"]["rank"] for d in docs} <= {r.get("rank") for r in rep["gpus"]}, "a rank is missing")
if all(not d["ok"] for d in docs):
    # Error documents: a row per job and rank, each with its error.
    ranks = {(d["origin"].get("job_id"), d["origin"]["rank"]) for d in docs}
    need({(r.get("job_id"), r.get("rank")) for r in rep["gpus"]} == ranks, "not a row per rank")
    need(all(r["status"] == "error" and r["errors"] for r in rep["gpus"]), "a row without its error")
EOF

# check_ranks NAME PREFIX STATUS JOB: each rank's PREFIX.<rank>.json and
# its stderr (at most one line); rank 1 also shares rank 0's job and, where
# two GPUs are visible, is on another GPU than rank 0.
check_ranks() {
  local name=$1 prefix=$2 status=$3 job=$4 r why first=""
  for r in 0 1; do
    if ! why=$(python3 "$dir/check.py" "$prefix.$r.json" "$status" "$r" 2 "$job" "$(hostname)" 2>&1); then
      fail "$name, rank $r" "$why"
      continue
    fi
    local line=$why
    if [ "$(wc -l <"$prefix.$r.err" 2>/dev/null || echo 9)" -gt 1 ]; then
      fail "$name, rank $r" "more than one line on stderr: $(head -c 300 "$prefix.$r.err" 2>/dev/null)"
    elif [ "$r" -eq 1 ] && [ -n "$first" ] && [ "${first%% *}" != "${line%% *}" ]; then
      fail "$name, rank 1" "job ${line%% *}, but rank 0 ran in job ${first%% *}"
    elif [ "$r" -eq 1 ] && [ "$gpus" -ge 2 ] && [ "${line#* }" != - ] && [ "${first#* }" = "${line#* }" ]; then
      fail "$name, rank 1" "on the same GPU as rank 0 (${line#* })"
    else
      pass "$name, rank $r"
    fi
    [ "$r" -eq 0 ] && first=$line
  done
}

# What this machine gives outside Slurm: 3 without a driver, else 0 and its GPU count.
expected=0 gpus=0
"$gpumem" info --json -q >"$dir/out/outside.json" 2>/dev/null || expected=$?
if [ "$expected" -eq 0 ]; then
  gpus=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["devices"]))' "$dir/out/outside.json")
fi
echo "slurm-test: gpumem info outside Slurm exits $expected ($gpus GPUs)"

# gpumem check arrives with issue 15: skipped, and said so, where it is not
# built in (`check --help` would print gpumem's own help and exit 0).
has_check=0
"$gpumem" --list commands --format value | cut -f1 | grep -qx check && has_check=1
[ "$has_check" = 1 ] || echo "slurm-test: this gpumem has no check command: its srun cases are skipped, and the prolog runs 'info -q' as its check"

start_cluster
out=$dir/out

# srun_ranks PREFIX ARGS...: gpumem ARGS in two tasks, each writing
# PREFIX.<task>.json and .err; srun's own messages go to PREFIX.srun.
srun_ranks() {
  local prefix=$1
  shift
  bounded 120 "$prefix.srun" srun -n 2 -N 1 -t 2 --output="$prefix.%t.json" --error="$prefix.%t.err" "$gpumem" "$@"
}

# 1-3: srun, two tasks, each its own document.
srun_ranks "$out/srun_info" info --json -d local
status=$?
check_ranks "srun -n 2 gpumem info --json -d local" "$out/srun_info" "$expected" any
if [ "$status" -eq "$expected" ]; then
  pass "srun's exit status is the ranks' ($status)"
else
  fail "srun's exit status" "$status, expected $expected: $(head -c 300 "$out/srun_info.srun")"
fi

# 4-5: a command that succeeds without a GPU: success documents are stamped too.
srun_ranks "$out/srun_sim" reuse-sim replay --json --steps 2
check_ranks "srun -n 2 gpumem reuse-sim replay --json" "$out/srun_sim" 0 any

# 6-7: srun, check on each rank's GPU: the same stamped documents.
if [ "$has_check" = 1 ]; then
  srun_ranks "$out/srun_check" check --json -d local
  check_ranks "srun -n 2 gpumem check --json -d local" "$out/srun_check" "$expected" any
fi

# 8: the report over every rank's documents (gpumem expands the quoted glob).
"$gpumem" report --json "$out/srun_[ic]*.[01].json" >"$out/report.json" 2>"$out/report.err"
status=$?
if why=$(python3 "$dir/report.py" "$out/report.json" "$status" "$out"/srun_[ic]*.[01].json 2>&1); then
  pass "gpumem report over the srun ranks' documents (exit $status)"
else
  fail "gpumem report over the srun ranks' documents" "$why $(head -c 300 "$out/report.err")"
fi

# 9-13: sbatch --wait on a job script that writes every document to files.
check_line=""
[ "$has_check" = 1 ] && check_line="srun --output=$out/batch_check.%t.json --error=$out/batch_check.%t.err \"$gpumem\" check --json -d local"
cat >"$dir/job.sh" <<EOF
#!/bin/bash
#SBATCH -n 2 -N 1 -t 2 -o $out/job.out
srun --output=$out/batch_info.%t.json --error=$out/batch_info.%t.err "$gpumem" info --json -d local
echo \$? >$out/batch_info.status
$check_line
# The batch script's own shell: rank 0 of its one-process step.
"$gpumem" info --json -d local >$out/batch_shell.json 2>$out/batch_shell.err
"$gpumem" report --json "$out/batch_*.[01].json" >$out/batch_report.json 2>$out/batch_report.err
echo \$? >$out/batch_report.status
exit 0
EOF
bounded 180 "$out/sbatch.out" sbatch --chdir="$dir" --parsable --wait "$dir/job.sh"
status=$?
job=$(head -n 1 "$out/sbatch.out")
job=${job%%;*}
if [ "$status" -eq 0 ] && [[ $job =~ ^[0-9]+$ ]]; then
  pass "sbatch --wait: job $job completed"
  check_ranks "sbatch: srun -n 2 gpumem info --json -d local" "$out/batch_info" "$expected" "$job"
  if line=$(python3 "$dir/check.py" "$out/batch_shell.json" "$expected" 0 none "$job" "$(hostname)" 2>&1); then
    pass "sbatch: gpumem in the batch shell is rank 0 of one"
  else
    fail "sbatch: gpumem in the batch shell" "$line"
  fi
  if why=$(python3 "$dir/report.py" "$out/batch_report.json" "$(cat "$out/batch_report.status" 2>/dev/null || echo none)" \
    "$out"/batch_*.[01].json 2>&1); then
    pass "sbatch: gpumem report in the job over its ranks' documents"
  else
    fail "sbatch: gpumem report in the job" "$why $(head -c 300 "$out/batch_report.err" 2>/dev/null)"
  fi
else
  why="exit $status: $(head -c 300 "$out/sbatch.out") $(head -c 300 "$out/job.out" 2>/dev/null)"
  for c in "sbatch --wait" "sbatch: srun, rank 0" "sbatch: srun, rank 1" "sbatch: the batch shell" "sbatch: report"; do
    fail "$c" "$why"
  done
fi

# 14: the example prolog under this cluster's slurmctld. Its check fails
# here for real (no GPU: exit 3; before gpumem check exists, `info -q`
# stands in for it): the node must be drained with gpumem's reason, then is
# resumed. Where the GPUs are healthy it must leave the node idle.
node=$(hostname -s)
prolog_args=""
[ "$has_check" = 1 ] || prolog_args="info -q"
GPUMEM="$gpumem" GPUMEM_CHECK_ARGS="$prolog_args" SLURMD_NODENAME=$node sl timeout 120 bash "$here/../examples/slurm-prolog.sh" \
  >"$out/prolog.out" 2>&1
status=$?
state=$(sl timeout 10 sinfo -h -n "$node" -o %T 2>/dev/null)
reason=$(sl timeout 10 sinfo -h -n "$node" -o %E 2>/dev/null)
if [ "$expected" -eq 0 ]; then
  if [ "$status" -eq 0 ] && [ "$state" = idle ]; then
    pass "examples/slurm-prolog.sh on healthy GPUs leaves the node idle"
  else
    fail "examples/slurm-prolog.sh on healthy GPUs" "exit $status, node $state ($reason): $(head -c 300 "$out/prolog.out")"
  fi
elif [ "$status" -eq 1 ] && [[ $state == drain* ]] && [[ $reason == "gpumem: exit $expected: "* ]]; then
  pass "examples/slurm-prolog.sh drains the node: $reason"
else
  fail "examples/slurm-prolog.sh drains the node" "exit $status, node '$state', reason '$reason': $(head -c 300 "$out/prolog.out")"
fi
if [ "$state" != idle ]; then
  sl timeout 10 scontrol update nodename="$node" state=resume >/dev/null 2>&1
  wait_idle "$node" 30 || echo "tests/slurm-test.sh: the node did not come back after resume" >&2
fi

[ "$failed" -gt 0 ] && show_logs
cleanup
echo "slurm-test: $((SECONDS - start_time)) s in all, cluster stopped"
summary
[ "$failed" -eq 0 ]
