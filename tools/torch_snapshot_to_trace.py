#!/usr/bin/env python3
"""Retired: gpumem reads PyTorch memory snapshots itself.

    gpumem reuse-sim replay --trace SNAPSHOT.pickle [--trace-device N] ...

reads the pickle of torch.cuda.memory._snapshot() directly (detected by its
content, with a restricted unpickler that builds plain values only), keeps
every event of the allocator's history and applies the snapshot's allocator
settings. This script remains for old command lines and only runs

    gpumem reuse-sim replay --trace SNAPSHOT --save-trace OUT --strategy naive

to write the snapshot as a gpumem trace (CSV); gpumem is $GPUMEM, else the
one on PATH. Its exit status is gpumem's (2 for an unreadable, hostile or
malformed snapshot, with the reason on stderr).

    tools/torch_snapshot_to_trace.py SNAPSHOT.pickle OUT.csv [--device N]
"""

import argparse
import os
import subprocess
import sys
import tempfile


def main(argv=None):
    parser = argparse.ArgumentParser(description="Write a PyTorch memory snapshot as a gpumem trace CSV (runs gpumem).")
    parser.add_argument("snapshot", help="pickle from torch.cuda.memory._dump_snapshot()")
    parser.add_argument("out", help="gpumem trace CSV to write ('-' for stdout)")
    parser.add_argument("--device", type=int, default=None, help="device trace to convert (default: the one with events)")
    args = parser.parse_args(argv)
    out = args.out
    if out == "-":
        fd, out = tempfile.mkstemp(suffix=".csv")
        os.close(fd)
    cmd = [os.environ.get("GPUMEM", "gpumem"), "reuse-sim", "replay", "--trace", args.snapshot, "--save-trace", out,
           "--strategy", "naive", "--format", "json"]
    if args.device is not None:
        cmd += ["--trace-device", str(args.device)]
    try:
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
        if args.out == "-" and rc == 0:
            with open(out) as f:
                sys.stdout.write(f.read())
    except OSError as e:
        print(f"torch_snapshot_to_trace: cannot run {cmd[0]}: {e.strerror}", file=sys.stderr)
        rc = 1
    finally:
        if args.out == "-":
            os.unlink(out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
