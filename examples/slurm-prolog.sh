#!/bin/bash
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/gpumem/slurm-prolog.sh, on GPU nodes):
# `gpumem check --level quick` (NVML only, under a second) before each job.
# A failed check (exit 7), GPUs that are gone (3) or a CUDA/NVML error (1)
# drain this node with gpumem's own reason, so that no further job lands
# here, and the prolog then fails so that Slurm requeues the job instead of
# starting it on a bad GPU. A usage error (2: a gpumem too old for these
# options, a typo here) is the script's fault, not the node's: logged, and
# the job runs. Interrupted (130, Slurm's PrologEpilogTimeout): left alone.
#   GPUMEM             the gpumem binary (default: gpumem on PATH)
#   GPUMEM_CHECK_ARGS  what to run (default: check --level $GPUMEM_CHECK_LEVEL -q)
#   GPUMEM_CHECK_LEVEL quick (default), standard or long
#   GPUMEM_FAIL_JOB    1 (default): exit 1 after draining; 0: exit 0 (epilogs)
# slurmd gives Prolog no PATH: name gpumem and scontrol fully where needed.
set -u
PATH=${PATH:-/usr/bin:/bin}:/usr/local/bin:/usr/bin:/bin
gpumem=${GPUMEM:-gpumem}
level=${GPUMEM_CHECK_LEVEL:-quick}
read -r -a args <<<"${GPUMEM_CHECK_ARGS:-check --level $level -q}"
node=${SLURMD_NODENAME:-$(hostname -s)}

errors=$("$gpumem" "${args[@]}" 2>&1 >/dev/null)
status=$?
case $status in
  0) exit 0 ;;
  2 | 130)
    logger -t gpumem-prolog "gpumem ${args[*]} exited $status (not draining $node): ${errors##*$'\n'}" 2>/dev/null
    exit 0 ;;
esac
# The reason: gpumem's first line (the first failed check, or why no GPU
# could be used), without its "gpumem: error: " prefix; Slurm shows it in
# sinfo -R and scontrol show node.
first=${errors%%$'\n'*}
first=${first#gpumem: error: }
reason="gpumem: exit $status: ${first:-no message}"
scontrol update nodename="$node" state=drain reason="${reason:0:250}"
logger -t gpumem-prolog "drained $node: $reason" 2>/dev/null
[ "${GPUMEM_FAIL_JOB:-1}" = 1 ] && exit 1
exit 0
