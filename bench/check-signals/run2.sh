#!/bin/bash
set -u
C=$(dirname "$0"); B=$C/gpumem; O=${OUT:-/tmp}
{
echo "== date"; date -u
echo "== gpu"; nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader
echo "== nvidia-smi nvlink -s"; nvidia-smi nvlink -s 2>&1 | head -5
echo "== who"; id; echo "dmesg_restrict=$(cat /proc/sys/kernel/dmesg_restrict)"; ls -la /dev/kmsg
for n in 1 2; do
  echo "== gpumem check --level quick --expect-gpus $n -q"; s=$(date +%s%N); $B check --level quick --expect-gpus $n -q; echo "rc=$? $(( ($(date +%s%N)-s)/1000000 )) ms"
  $B check --level quick --expect-gpus $n --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); [print(c["check"], c["verdict"], c.get("remediation"), c["reason"]) for c in d["checks"] if c["check"].split(".")[0] in ("node","xid","nvlink")]'
done
echo "== live log, 3 runs"; for i in 1 2 3; do s=$(date +%s%N); $B check --level quick --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); [print(c["check"], c["verdict"], c["reason"]) for c in d["checks"] if c["check"]=="xid.events"]'; echo "$(( ($(date +%s%N)-s)/1000000 )) ms"; done
echo "== --kernel-log 1 GiB sparse"; truncate -s 1G $O/../big.log 2>/dev/null || truncate -s 1G /tmp/big.log; s=$(date +%s%N); $B check --kernel-log /tmp/big.log >/dev/null; echo "rc=$? $(( ($(date +%s%N)-s)/1000000 )) ms"
} > $O/run2.txt 2>&1
cat $O/run2.txt
