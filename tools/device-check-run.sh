#!/usr/bin/env bash
# One batch on the GPU machine for gpumem check (issue 15): every suite, then
# check's demonstrations (exposition validated, an impossible threshold, a
# planted bad word, Ctrl-C, two checks at once) and bench/check.sh. Output
# under $OUT. Run from the repository root after tools/stage-device.sh:
#   bash tools/device-check-run.sh [tests|demo|bench|ranks|all]
# ranks (two or more GPUs): two ranks launched as Slurm and as Open MPI would,
# each with -d local, merged by gpumem report.
set -u
what=${1:-all}
export PYTHONPATH=$PWD/.device/py
G=.device/gpumem
OUT=${OUT:-/tmp/gpumem-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader
if [ "$what" = tests ] || [ "$what" = all ]; then
  start=$SECONDS
  tests/run-tests.sh .device >"$OUT/tests.log" 2>&1
  echo "tests took $((SECONDS - start)) s: $(tail -n 1 "$OUT/tests.log")"
  grep -E '^\S+ +[0-9]+ \|' "$OUT/tests.log" | grep -v ' 0 failed' || true
  grep -E '^\.\./tests/.*(ERROR|FATAL)' "$OUT/tests.log" | head -20 || true
fi
if [ "$what" = demo ] || [ "$what" = all ]; then
  for level in quick standard; do
    d=$(mktemp -d); LD_DEBUG=files LD_DEBUG_OUTPUT=$d/log $G check -d 0 --level $level >/dev/null 2>&1
    echo "check --level $level, libcuda in the loader's log:"; cat $d/log* | grep 'libcuda.so' | grep -E 'dynamically loaded|opening file' | sed 's/^ *[0-9]*://'
    rm -rf "$d"
  done
  for level in quick standard long; do
    s=$(date +%s.%N); $G check --level $level >"$OUT/check-$level.txt" 2>&1; rc=$?; e=$(date +%s.%N)
    echo "check --level $level: exit $rc, $(awk "BEGIN{printf \"%.2f\", $e - $s}") s"
  done
  $G check --json >"$OUT/check.json"; echo "check --json: exit $?"
  $G check --format prometheus >"$OUT/check.prom"; echo "check --format prometheus: exit $?"
  $G info --format prometheus --processes >"$OUT/info.prom"; echo "info --format prometheus: exit $?"
  bash tests/prometheus-check.sh "$OUT/check.prom" "$OUT/info.prom"; echo "prometheus-check (python parser): exit $?"
  $G check -d 0 --threshold copy.h2d=10TB/s --json >"$OUT/check-impossible.json" 2>"$OUT/check-impossible.err"
  echo "impossible threshold: exit $?"; cat "$OUT/check-impossible.err"
  $G check -d 0 --threshold copy.h2d=10TB/s --format prometheus 2>/dev/null | grep -E 'gpumem_run_exit_status|check_pass\{.*copy.h2d' 
  used() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0; }
  before=$(used)
  $G check -d 0 --debug-fill-passes 100000 >/dev/null 2>"$OUT/check-sigint.err" & pid=$!
  sleep 6; kill -INT $pid; wait $pid; rc=$?; sleep 1
  echo "SIGINT mid-check: exit $rc; memory used before $before MiB, after $(used) MiB"; tail -n 2 "$OUT/check-sigint.err"
  $G check -d 0 --json >"$OUT/twice.1.json" 2>"$OUT/twice.1.err" & a=$!
  $G check -d 0 --json >"$OUT/twice.2.json" 2>"$OUT/twice.2.err" & b=$!
  wait $a; ra=$?; wait $b; rb=$?
  echo "two checks at once on GPU 0: exits $ra and $rb"
  python3 - "$OUT" <<'PY'
import json, sys
for n in (1, 2):
    d = json.load(open(f"{sys.argv[1]}/twice.{n}.json"))
    print(f"  run {n}: verdict {d['verdict']}, " + ", ".join(f"{c['check']} {c['verdict']}" for c in d["checks"] if c["verdict"] not in ("pass", "n/a")))
PY
fi
if [ "$what" = ranks ] || [ "$what" = all ]; then
  n=$(nvidia-smi -L | wc -l)
  if [ "$n" -lt 2 ]; then echo "ranks: $n GPU(s), two needed: skipped"; else
    $G check -d all --json >"$OUT/check-all.json"; echo "check -d all on $n GPUs: exit $?"
    python3 - "$OUT/check-all.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["checks"]:
    if c["check"].startswith("p2p") or c["verdict"] not in ("pass", "n/a"):
        print(f"  GPU {c.get('index', '?')}: {c['check']} {c['verdict']} {c.get('value')} {c.get('unit', '')} (threshold {c.get('threshold')})")
PY
    # As slurmstepd sets them for srun -n 2 on one node
    for r in 0 1; do
      SLURM_PROCID=$r SLURM_LOCALID=$r SLURM_NTASKS=2 SLURM_JOB_ID=4242 SLURM_STEP_ID=0 \
        $G check -d local --json >"$OUT/slurm-rank$r.json" 2>"$OUT/slurm-rank$r.err" & pids[$r]=$!
    done
    for r in 0 1; do wait ${pids[$r]}; echo "slurm-style rank $r: exit $?"; done
    $G report "$OUT"/slurm-rank*.json; echo "report over the slurm-style ranks: exit $?"
    if command -v mpirun >/dev/null; then
      mpirun -np 2 --allow-run-as-root --oversubscribe sh -c \
        "$G check -d local --json > $OUT/mpi-rank\$OMPI_COMM_WORLD_RANK.json"; echo "mpirun -np 2 check -d local: exit $?"
      $G report --json "$OUT"/mpi-rank*.json >"$OUT/mpi-report.json"; echo "report over the mpirun ranks: exit $?"
      $G report "$OUT"/mpi-rank*.json
    else echo "no mpirun"; fi
  fi
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  bash bench/check.sh .device "${RUNS:-3}" >/dev/null; echo "bench/check.sh: exit $?"
  sed -n '1,20p' "$OUT/check-bench.md"
fi
