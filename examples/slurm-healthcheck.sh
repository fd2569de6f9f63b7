#!/bin/bash
# Slurm HealthCheckProgram, run by slurmd every HealthCheckInterval seconds
# whether or not jobs run (slurm.conf):
#   HealthCheckProgram=/etc/slurm/gpumem/slurm-healthcheck.sh
#   HealthCheckInterval=300
#   HealthCheckNodeState=ANY
# The quick level needs no CUDA context and does not disturb running jobs;
# a failure drains the node with its reason (slurm-prolog.sh, in the same folder, does the work).
export GPUMEM_CHECK_LEVEL=quick GPUMEM_FAIL_JOB=0
exec "${GPUMEM_PROLOG:-$(dirname "$0")/slurm-prolog.sh}"
