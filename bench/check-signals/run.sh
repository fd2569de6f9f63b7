#!/bin/bash
# gpumem check's signals on the GPU machine: the live kernel log as root,
# NVLink, --expect-gpus, a saved Xid log naming this GPU's PCI id.
set -u
C=$(dirname "$0"); B=$C/gpumem; O=${OUT:-/tmp}
echo "== date"; date -u
echo "== gpu"; nvidia-smi --query-gpu=name,pci.bus_id,driver_version --format=csv,noheader
echo "== nvlink (nvidia-smi)"; nvidia-smi nvlink -s 2>&1 | head -5; nvidia-smi topo -m 2>&1 | head -4
echo "== who"; id; echo "dmesg_restrict=$(cat /proc/sys/kernel/dmesg_restrict)"; ls -la /dev/kmsg
echo "== real kernel log"; dmesg | wc -l; dmesg | grep -c NVRM; dmesg | grep NVRM | head -15; dmesg | grep -i xid | head -10
dmesg > $O/dmesg.txt 2>&1
run() { echo "== gpumem $*"; local t0=$(date +%s.%N); "$B" "$@"; local rc=$?; echo "rc=$rc ($(echo "$(date +%s.%N) - $t0" | bc) s)"; }
run check --level quick --json > $O/quick.json; grep -o '"check": *"\(node\|xid\|nvlink\)[^"]*"[^}]*' $O/quick.json | head -8
run check --level quick -q
run check --level quick --expect-gpus 1
run check --level quick --expect-gpus 2
PCI=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | head -1 | sed 's/^0000//; s/\.0$//')
echo "short pci: $PCI"
cat > $O/saved_xid.log <<EOT
[  100.000001] NVRM: loading NVIDIA UNIX x86_64 Kernel Module
[ 7201.118455] NVRM: Xid (PCI:$PCI): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
[ 7201.390117] NVRM: Xid (PCI:0000:ee:00): 48, pid=1, name=x, An uncorrectable double bit error
[ 7201.5] NVRM: Xid (PCI:$PCI
EOT
run check --level quick --kernel-log $O/saved_xid.log
run check --level quick --kernel-log $C/clean_h100.log --expect-gpus 1 --xid-since 1h
run check --level quick --format prometheus > $O/quick.prom
run check --level quick --kernel-log /dev/zero
echo "== as nobody (no right to the kernel log)"
chmod o+rx "$C" "$B" 2>/dev/null
su -s /bin/bash nobody -c "$B check --level quick 2>&1 | grep -E 'xid|verdict'" ; echo "rc=$?"
run check --level standard --expect-gpus 1
