#!/bin/bash
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/gpumem/slurm-epilog.sh): the
# standard check (at most 15 s a node) after each job, when the GPUs are
# free; a failure drains the node as the prolog does (slurm-prolog.sh, in
# the same folder), but the finished job is not failed.
export GPUMEM_CHECK_LEVEL=${GPUMEM_CHECK_LEVEL:-standard} GPUMEM_FAIL_JOB=0
exec "${GPUMEM_PROLOG:-$(dirname "$0")/slurm-prolog.sh}"
