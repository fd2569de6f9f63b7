#!/usr/bin/env python3
"""Writes a fleet of generated `gpumem check` documents for timing
`gpumem report` at scale (issue 29): NODES hosts of 8 GPUs, one document per
GPU (a rank per GPU, `srun gpumem check --level quick -d local --json`), one
file per host in OUT_DIR (pretty-printed, as `--json` writes them: about
12 KB a document). Most GPUs are healthy; about 1 in 1000 fails copy.h2d (its
document is an error document, as check writes it), 1 in 400 has a copy.d2d
20% below its peers (an outlier that passes its threshold), and 1 in 2000
could not run fill.verify (unknown). Seeded: the same fleet every time.

  bench/report-fleet-gen.py OUT_DIR [--nodes 12500] [--jsonl] [--gzip] [--unknown-ids]

--jsonl writes one compact document a line instead; --gzip compresses each
file (report reads .gz as it is); --unknown-ids names every check by an id
this gpumem does not know (its last dot an underscore: nvml.ecc_mode, as a
renamed check or an older plan's documents do), for timing report on ids it
has to look up and miss (bench/report-unknown-ids.sh)."""
import argparse, gzip, json, os, random

H200 = "NVIDIA H200"
CHECKS = [  # (check, unit, threshold, comparison, typical value)
    ("nvml.ecc.mode", "bool", 1, "==", 1),
    ("nvml.ecc.uncorrected.volatile", "count", 0, "<=", 0),
    ("nvml.ecc.uncorrected.aggregate", "count", 0, "<=", 0),
    ("nvml.ecc.corrected.volatile", "count", 1000, "<=", 0),
    ("nvml.ecc.corrected.aggregate", "count", 100000, "<=", 3),
    ("nvml.remapped_rows.correctable", "count", 8, "<=", 0),
    ("nvml.remapped_rows.uncorrectable", "count", 0, "<=", 0),
    ("nvml.remapped_rows.pending", "count", 0, "<=", 0),
    ("nvml.remapped_rows.failure", "bool", 0, "==", 0),
    ("nvml.retired_pages.sbe", "count", None, "<=", None),
    ("nvml.retired_pages.dbe", "count", None, "<=", None),
    ("nvml.retired_pages.pending", "count", None, "<=", None),
    ("nvml.pcie.link", "lanes", 16, ">=", 16),
    ("nvml.memory_clock", "MHz", 2619, ">=", 3201),
    ("nvml.clock_event_reasons", "mask", 0, "==", 0),
    ("nvml.processes", "count", 0, "<=", 0),
    ("nvml.memory.in_use", "bytes", 1073741824, "<=", 553648128),
    ("node.gpus", "count", 8, ">=", 8),
    ("xid.events", "count", 0, "<=", 0),
    ("nvlink.links", "count", 18, ">=", 18),
    ("nvlink.replay_errors", "count", 0, "<=", 0),
    ("nvlink.recovery_errors", "count", 0, "<=", 0),
    ("nvlink.crc_errors", "count", 0, "<=", 0),
    ("cuda.context", "bool", 1, "==", 1),
    ("alloc.max", "fraction", 0.9, ">=", 0.97),
    ("fill.verify", "errors", 0, "<=", 0),
    ("memset.bandwidth", "GB/s", 2400.0, ">=", 4480.0),
    ("copy.d2d", "GB/s", 2400.0, ">=", 4200.0),
    ("copy.h2d", "GB/s", 41.6, ">=", 55.4),
    ("copy.d2h", "GB/s", 41.6, ">=", 55.3),
]


def check_doc(rng, node, gpu, nodes, unknown_ids=False):
    host = "gpu-node%05d" % node
    uuid = "GPU-%08x-%04x-4%03x-8000-%012x" % (node, gpu, gpu, node * 8 + gpu)
    rows, worst, fails = [], "pass", []
    roll = rng.random()
    for check, unit, threshold, comparison, value in CHECKS:
        verdict = "pass" if value is not None else "n/a"
        if isinstance(value, float):
            value = round(value * rng.uniform(0.97, 1.03), 1)
        if check == "copy.d2d" and 0.001 <= roll < 0.0035:
            value = round(value * 0.8, 1)  # an outlier: passes, 20% below its peers
        if check == "copy.h2d" and roll < 0.001:
            value, verdict = 12.3, "fail"
        reason = "%s %s %s" % (value, comparison, threshold)
        if check == "fill.verify" and 0.0035 <= roll < 0.004:
            value, verdict, reason = None, "unknown", "cudaMalloc: out of memory (another process holds the GPU)"
        name = check[::-1].replace(".", "_", 1)[::-1] if unknown_ids else check
        rows.append({"index": 0, "uuid": uuid, "name": H200, "check": name, "verdict": verdict, "value": value,
                     "unit": unit, "threshold": threshold, "comparison": comparison, "reason": reason,
                     "seconds": round(rng.uniform(0.01, 0.9), 3)})
        if verdict == "fail":
            fails.append(check)
        if verdict in ("fail", "unknown") and worst != "fail":
            worst = verdict
    counts = {v: sum(r["verdict"] == v for r in rows) for v in ("pass", "warn", "fail", "n/a")}
    doc = {"schema_version": 1, "tool": "gpumem", "version": "0.1.0", "command": "check", "ok": not fails,
           "origin": {"host": host, "launcher": "slurm", "job_id": "77001", "rank": node * 8 + gpu,
                      "local_rank": gpu, "world_size": nodes * 8},
           "checks": rows,
           "devices": [{"index": 0, "uuid": uuid, "name": H200, "pci_bus_id": "00000000:%02X:00.0" % (0x18 + gpu * 16),
                        "verdict": worst, "passed": counts["pass"], "warned": counts["warn"], "failed": counts["fail"],
                        "na": counts["n/a"], "seconds": 11.2}],
           "level": "quick", "strict": False, "verdict": worst, "seconds": 11.9}
    if fails:
        doc["error"] = {"status": 7, "code": "check_failed",
                        "message": "check failed: GPU 0 %s: %s" % (fails[0], rows[[c[0] for c in CHECKS].index(
                            fails[0])]["reason"])}
    return doc


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--nodes", type=int, default=12500)
    p.add_argument("--jsonl", action="store_true")
    p.add_argument("--gzip", action="store_true")
    p.add_argument("--unknown-ids", action="store_true")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(29)
    total = 0
    for node in range(a.nodes):
        docs = [check_doc(rng, node, g, a.nodes, a.unknown_ids) for g in range(8)]
        if a.jsonl:
            text = "".join(json.dumps(d, separators=(",", ":")) + "\n" for d in docs)
        else:
            text = "".join(json.dumps(d, indent=2) + "\n" for d in docs)
        name = os.path.join(a.out, "gpu-node%05d.%s" % (node, "jsonl" if a.jsonl else "json"))
        data = text.encode()
        total += len(data)
        if a.gzip:
            with gzip.open(name + ".gz", "wb", compresslevel=6) as f:
                f.write(data)
        else:
            with open(name, "wb") as f:
                f.write(data)
    print("%d documents, %d bytes of JSON, in %s" % (a.nodes * 8, total, a.out))


if __name__ == "__main__":
    main()
