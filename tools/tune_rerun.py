#!/usr/bin/env python3
"""Rerun a recorded PyTorch workload under a PYTORCH_CUDA_ALLOC_CONF and compare
what gpumem reuse-sim predicted for that setting with what PyTorch did.

    tools/tune_rerun.py NAME [CONF] [--gpumem BIN] [--fixtures DIR] [--device N]
                                    [--keep DIR] [--json]
    tools/tune_rerun.py NAME --all-settings [--jobs N] [--keep DIR | --reruns DIR] [--json]

NAME is a fixture of tests/fixtures/torch: NAME.stats.json and its trace
(NAME.pickle, else NAME.csv), recorded by tools/record_torch_workloads.py,
whose workload (the stats' "workload") is rerun. CONF is the setting to try, in
PYTORCH_CUDA_ALLOC_CONF's syntax ("" for PyTorch's defaults); without it, the
setting `gpumem reuse-sim tune` recommends for the fixture (its
best_alloc_conf), under the capacity the fixture was recorded with.

1. Predicted: `gpumem reuse-sim tune --trace TRACE --sweep ...` with every knob set
   as CONF says (the knobs CONF leaves out at PyTorch's defaults, since the
   variable replaces the whole configuration) and --capacity the recording's
   allowed memory maximum.
2. Real: record_torch_workloads.py reruns the workload in a fresh process
   under CONF (--alloc-conf), with the workload's own memory fraction, and
   writes its torch.cuda.memory_stats().
3. Printed: the five counters side by side, num_device_alloc,
   num_device_free, reserved_bytes.all.peak, num_alloc_retries and num_ooms.
   Exit status 0 when all five agree, 1 when one differs, 2 on bad arguments
   or a failed run.

With --all-settings, every setting of reuse-sim tune's grid is rerun (N fresh
processes at once on the GPU) and compared with its row of the tuner's
table: predicted and real OOMs, whether each says the setting fits (no OOM),
and whether they agree; the setting reuse-sim tune recommends is marked. --keep DIR
keeps each rerun's stats (DIR/NAME/SETTING.stats.json); --reruns DIR reads
them back instead of rerunning (no GPU: a new gpumem's predictions against
the same real runs).

Needs a GPU, torch, and the workload's GPU model for the memory fraction to
mean the same capacity (a different device name is warned about). The rerun
keeps the recorded memory fraction itself, so that the capacity is the same
to the byte on the same GPU model.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MiB = 1 << 20

# torch.cuda.memory_stats() key -> the reuse-sim settings row's key.
COUNTERS = [
    ("num_device_alloc", "upstream_allocs"),
    ("num_device_free", "upstream_frees"),
    ("reserved_bytes.all.peak", "peak_reserved"),
    ("num_alloc_retries", "retries"),
    ("num_ooms", "ooms"),
]


def fail(message):
    print("tune_rerun: " + message, file=sys.stderr)
    sys.exit(2)


def split_conf(conf):
    """'a:1,b:[1:2,>:4]' -> {'a': '1', 'b': '[1:2,>:4]'}: commas inside [...] stay."""
    items, depth, start = {}, 0, 0
    text = conf.replace(" ", "")
    for i, c in enumerate(text + ","):
        depth += c == "["
        depth -= c == "]"
        if c == "," and depth == 0:
            item = text[start:i]
            start = i + 1
            if not item:
                continue
            key, sep, value = item.partition(":")
            if not sep:
                fail(f"'{item}' in the setting: expected KEY:VALUE")
            items[key] = value
    return items


def sweeps_for(conf, capped):
    """reuse-sim tune --sweep arguments that set every knob as `conf` says."""
    items = split_conf(conf)
    known = {"max_split_size_mb", "roundup_power2_divisions", "expandable_segments", "garbage_collection_threshold",
             "backend", "max_non_split_rounding_mb"}
    for key in items:
        if key not in known:
            print(f"tune_rerun: warning: {key} is not modelled by reuse-sim; the prediction ignores it", file=sys.stderr)
    if items.get("backend", "native") != "native":
        fail("backend:" + items["backend"] + " is not the caching allocator reuse-sim models")
    args = ["--sweep", "max_split_size=" + items.get("max_split_size_mb", "none"),
            "--sweep", "roundup_power2_divisions=" + items.get("roundup_power2_divisions", "none"),
            "--sweep", "expandable_segments=" + items.get("expandable_segments", "False").lower()]
    if capped or "garbage_collection_threshold" in items:
        args += ["--sweep", "garbage_collection_threshold=" + items.get("garbage_collection_threshold", "0")]
    if "max_non_split_rounding_mb" in items:
        args += ["--max-non-split-rounding", items["max_non_split_rounding_mb"] + "MiB"]
    return args


def run_gpumem(gpumem, args):
    out = subprocess.run([gpumem] + args, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{' '.join([gpumem] + args)} exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def fixture_paths(fixtures, name):
    stats = os.path.join(fixtures, name + ".stats.json")
    if not os.path.exists(stats):
        fail(f"no fixture {stats}")
    for ext in (".pickle", ".csv"):
        trace = os.path.join(fixtures, name + ext)
        if os.path.exists(trace):
            return stats, trace
    fail(f"no trace {name}.pickle or {name}.csv in {fixtures}")


def recorded_flags(recorded, trace):
    """A CSV trace does not carry the recording's settings (a snapshot does): the flags that set them."""
    if trace.endswith(".pickle"):
        return []
    hints = recorded.get("reuse_sim") or {}
    flags = []
    if hints.get("max_split_size"):
        flags += ["--max-split-size", str(hints["max_split_size"])]
    if hints.get("roundup_power2_divisions"):
        flags += ["--roundup-power2-divisions", str(hints["roundup_power2_divisions"])]
    return flags


def predicted(gpumem, trace, capacity, conf, flags):
    base = ["reuse-sim", "tune", "--trace", trace, "--json"] + (["--capacity", str(capacity)] if capacity else []) + flags
    if conf is None:
        conf = run_gpumem(gpumem, base)["tune"]["best_alloc_conf"]
    doc = run_gpumem(gpumem, base + sweeps_for(conf, bool(capacity)))
    rows = doc["settings"]
    # One row, or two when the recording's own setting is not this one: ours is then the other.
    row = rows[0] if len(rows) == 1 else next(r for r in rows if not r["recorded"])
    return conf, row, " ".join([gpumem] + base + sweeps_for(conf, bool(capacity)))


def real(workload, conf, device, outdir, fraction=None, as_name="rerun"):
    cmd = [sys.executable, os.path.join(HERE, "record_torch_workloads.py"), outdir, "--only", workload,
           "--device", str(device), "--alloc-conf", conf, "--as", as_name]
    if fraction:
        cmd += ["--memory-fraction", repr(fraction)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"{' '.join(cmd)} exited {out.returncode}: {out.stderr.strip() or out.stdout.strip()}")
    with open(os.path.join(outdir, as_name + ".stats.json")) as f:
        return json.load(f)


def setting_file_name(conf):
    """A file name for a setting: letters, digits, '.', '_' and '-' only."""
    import re
    return re.sub(r"[^A-Za-z0-9.]+", "-", conf).strip("-") or "defaults"


def all_settings(args, recorded, trace, capacity, fraction):
    """Every setting of reuse-sim tune's grid rerun for real, against its row of the tuner's table."""
    base = ["reuse-sim", "tune", "--trace", trace, "--json"] + (["--capacity", str(capacity)] if capacity else [])
    doc = run_gpumem(args.gpumem, base + recorded_flags(recorded, trace))
    tune = doc["tune"]
    rows = doc["settings"]
    workload = recorded.get("workload", args.name)
    outdir = args.reruns or args.keep or tempfile.mkdtemp(prefix="gpumem-tune-rerun-")
    outdir = os.path.join(outdir, args.name)
    os.makedirs(outdir, exist_ok=True)

    def rerun(row):
        conf, file_name = row["alloc_conf"], setting_file_name(row["alloc_conf"])
        path = os.path.join(outdir, file_name + ".stats.json")
        if args.reruns:
            if not os.path.exists(path):
                fail(f"no rerun {path}")
            with open(path) as f:
                return json.load(f)
        return real(workload, conf, args.device, outdir, fraction, file_name)

    try:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            reruns = list(pool.map(rerun, rows))
    finally:
        if not args.keep and not args.reruns:
            shutil.rmtree(os.path.dirname(outdir), ignore_errors=True)
    lines = []
    for row, rerun_doc in zip(rows, reruns):
        stats = rerun_doc["memory_stats"]
        real_ooms = stats.get("num_ooms")
        lines.append({
            "alloc_conf": row["alloc_conf"], "recorded": row["recorded"], "best": row["alloc_conf"] == tune["best_alloc_conf"],
            "predicted_ooms": row["ooms"], "real_ooms": real_ooms,
            "predicted_fits": row["ooms"] == 0, "real_fits": real_ooms == 0, "agree": (row["ooms"] == 0) == (real_ooms == 0),
            "granted_recorded_ooms": row.get("granted_recorded_ooms"),
            "predicted_peak_reserved": row["peak_reserved"], "real_peak_reserved": stats.get("reserved_bytes.all.peak"),
            "caught_ooms": (rerun_doc.get("workload_info") or {}).get("caught_ooms"),
        })
    agree = sum(line["agree"] for line in lines)
    result = {"fixture": args.name, "capacity_bytes": capacity, "recorded_ooms": (doc.get("recorded") or {}).get("ooms"),
              "answer": tune.get("answer"), "best_alloc_conf": tune["best_alloc_conf"], "settings": lines,
              "agree": agree, "settings_rerun": len(lines)}
    if args.json:
        json.dump(result, sys.stdout, indent=1)
        print()
        return 0
    print(f"{args.name}: capacity {capacity}, {result['recorded_ooms']} OOMs as recorded; "
          f"fits (no OOM) predicted and real agree for {agree} of {len(lines)} settings")
    print(tune.get("answer", ""))
    print("| setting | predicted OOMs | real OOMs | agreement |")
    print("| --- | --- | --- | --- |")
    for line in lines:
        mark = (" (recorded)" if line["recorded"] else "") + (" (answer)" if line["best"] else "")
        verdict = ("agree" if line["agree"] else "DIFFER") + (": fits" if line["real_fits"] else ": does not fit")
        print(f"| {line['alloc_conf'] or '(defaults)'}{mark} | {line['predicted_ooms']} | {line['real_ooms']} | {verdict} |")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="fixture (and workload) name: tests/fixtures/torch/NAME.stats.json")
    parser.add_argument("conf", nargs="?", help="PYTORCH_CUDA_ALLOC_CONF to try (default: what reuse-sim tune recommends)")
    parser.add_argument("--gpumem", default=os.path.join(ROOT, "build", "gpumem"))
    parser.add_argument("--fixtures", default=os.path.join(ROOT, "tests", "fixtures", "torch"))
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--keep", metavar="DIR", help="keep the rerun's snapshot and stats here (rerun.pickle, rerun.stats.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--all-settings", action="store_true", help="rerun every setting of reuse-sim tune's grid")
    parser.add_argument("--jobs", type=int, default=1, help="with --all-settings: reruns at once on the GPU")
    parser.add_argument("--reruns", metavar="DIR", help="with --all-settings: the reruns --keep kept, instead of the GPU")
    args = parser.parse_args(argv)
    if (args.jobs != 1 or args.reruns) and not args.all_settings:
        parser.error("--jobs and --reruns go with --all-settings")
    if args.all_settings and args.conf is not None:
        parser.error("--all-settings reruns the grid: give no CONF")

    stats_path, trace = fixture_paths(args.fixtures, args.name)
    with open(stats_path) as f:
        recorded = json.load(f)
    capacity = (recorded.get("allocator") or {}).get("allowed_memory_maximum")
    # A cap calibrated on the workload itself: the recorded fraction (the
    # others keep their own cap in bytes, on any GPU model).
    sys.path.insert(0, HERE)
    from record_torch_workloads import WORKLOADS
    calibrated = "limit_of_peak" in WORKLOADS.get(recorded.get("workload", args.name), {})
    fraction = (recorded.get("allocator") or {}).get("memory_fraction") if calibrated else None
    if args.all_settings:
        return all_settings(args, recorded, trace, capacity, fraction)
    conf, row, command = predicted(args.gpumem, trace, capacity, args.conf, recorded_flags(recorded, trace))

    outdir = args.keep or tempfile.mkdtemp(prefix="gpumem-tune-rerun-")
    os.makedirs(outdir, exist_ok=True)
    try:
        rerun = real(recorded.get("workload", args.name), conf, args.device, outdir, fraction)
    finally:
        if not args.keep:
            shutil.rmtree(outdir, ignore_errors=True)
    if fraction and rerun.get("device_name") != recorded.get("device_name"):
        print(f"tune_rerun: warning: recorded on {recorded.get('device_name')}, rerun on {rerun.get('device_name')}: "
              "the memory fraction is another capacity", file=sys.stderr)
    stats = rerun["memory_stats"]
    lines = [{"counter": key, "predicted": row[ours], "real": stats.get(key), "agree": row[ours] == stats.get(key)}
             for key, ours in COUNTERS]
    agree = all(line["agree"] for line in lines)
    if args.json:
        json.dump({"fixture": args.name, "alloc_conf": conf, "capacity_bytes": capacity, "predicted_by": command,
                   "torch_version": rerun.get("torch_version"), "device_name": rerun.get("device_name"),
                   "counters": lines, "agree": agree}, sys.stdout, indent=1)
        print()
    else:
        print(f"{args.name} under PYTORCH_CUDA_ALLOC_CONF={conf or '(PyTorch defaults)'}, capacity "
              f"{capacity if capacity else 'unlimited'}; torch {rerun.get('torch_version')} on {rerun.get('device_name')}")
        print(f"predicted by: {command}")
        width = max(len(key) for key, _ in COUNTERS)
        print(f"{'counter':<{width}}  {'predicted':>12}  {'real':>12}")
        for line in lines:
            print(f"{line['counter']:<{width}}  {line['predicted']:>12}  {str(line['real']):>12}"
                  f"  {'' if line['agree'] else 'DIFFERS'}")
        print("all five agree" if agree else "the prediction differs")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
