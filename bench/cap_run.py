#!/usr/bin/env python3
"""Runs a Python program under PyTorch's own memory cap, independent of
gpumem: the truth that bench/max_batch_truth.py searches with.

    cap_run.py --cap BYTES [--stats FILE] [--allow-ooms] -- prog.py ARGS...

The cap is set before the program runs, with
torch.cuda.set_per_process_memory_fraction, to the same bytes as gpumem's
--record --capacity hook (subcommands/reuse_sim/record_hook.py,
_apply_cap): the smallest fraction whose allowed maximum, as PyTorch
computes it (size_t(fraction * double(total))), is at least the cap, on the
device LOCAL_RANK names (torchrun's workers) or the current one. The
program then runs as __main__ (runpy), in this process.

Exit status: 0 the program ran and torch counted no OOM
(memory_stats()["num_ooms"] == 0); 3 it ran out of memory (an
OutOfMemoryError reached here, or num_ooms > 0; with --allow-ooms, only an
OutOfMemoryError that reached here: a program that catches its own OOMs,
as Lightning's batch-size finder does); 1 any other failure; 2 usage.
--stats FILE: one JSON object (exit, verdict, num_ooms, peak reserved and
allocated, the cap in force, wall seconds) written at the end; under a
launcher (RANK and WORLD_SIZE > 1 set: torchrun's workers) FILE.rankN, one
a rank:

    torchrun --standalone --nproc-per-node 2 cap_run.py --cap BYTES --stats S -- prog.py ARGS...

caps every rank alike, on its own GPU (LOCAL_RANK)."""
import json
import math
import os
import runpy
import sys
import time
import traceback


def usage(msg):
    print("cap_run.py: " + msg, file=sys.stderr)
    sys.exit(2)


def parse(argv):
    cap, stats, allow = None, None, False
    i = 0
    while i < len(argv) and argv[i] != "--":
        if argv[i] == "--cap" and i + 1 < len(argv):
            try:
                cap = int(argv[i + 1])
            except ValueError:
                usage("--cap takes a number of bytes, not %r" % argv[i + 1])
            i += 2
        elif argv[i] == "--stats" and i + 1 < len(argv):
            stats, i = argv[i + 1], i + 2
        elif argv[i] == "--allow-ooms":
            allow, i = True, i + 1
        else:
            usage("unknown argument %r (usage: cap_run.py --cap BYTES [--stats FILE] [--allow-ooms] -- prog.py ARGS...)" % argv[i])
    if cap is None or cap <= 0:
        usage("--cap BYTES (> 0) is required")
    if i + 1 >= len(argv):
        usage("no program after --")
    return cap, stats, allow, argv[i + 1:]


def cap_fraction(capacity, total):
    """gpumem's hook's fraction for a capacity, to the byte (record_hook._apply_cap)."""
    fraction = min(1.0, capacity / float(total))
    while fraction < 1.0 and int(fraction * float(total)) < capacity:
        fraction = math.nextafter(fraction, 2.0)
    return fraction


def is_oom(exc, torch):
    cls = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    seen = set()
    while exc is not None and id(exc) not in seen:  # the OOM may come wrapped (a library's own error)
        seen.add(id(exc))
        if cls is not None and isinstance(exc, cls):
            return True
        if isinstance(exc, RuntimeError) and "out of memory" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def main():
    cap, stats_path, allow_ooms, prog = parse(sys.argv[1:])
    import torch
    local = os.environ.get("LOCAL_RANK", "")
    if local.isdigit() and int(local) < torch.cuda.device_count():
        device = int(local)
        if hasattr(torch.cuda, "set_device"):  # (the CPU tests' stand-in torch has none)
            torch.cuda.set_device(device)  # no context on GPU 0 for the other ranks
    else:
        device = torch.cuda.current_device()
    rank, world = os.environ.get("RANK", ""), os.environ.get("WORLD_SIZE", "")
    if stats_path and rank.isdigit() and world.isdigit() and int(world) > 1:
        stats_path = "%s.rank%s" % (stats_path, rank)  # one file a rank under a launcher
    total = torch.cuda.mem_get_info(device)[1]
    fraction = cap_fraction(cap, total)
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    doc = {"cap": cap, "fraction": fraction, "allowed_memory_maximum": int(fraction * float(total)), "device_total": total,
           "device": device, "program": prog, "rank": os.environ.get("RANK")}
    sys.argv = list(prog)
    sys.path.insert(0, os.path.dirname(os.path.abspath(prog[0])))
    t0 = time.time()
    status, raised = 0, None
    try:
        runpy.run_path(prog[0], run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException as e:  # the program's own failure: judged below, printed as Python would
        raised = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        traceback.print_exc()
        status = 3 if is_oom(e, torch) else 1
    doc["wall"] = time.time() - t0
    try:
        torch.cuda.synchronize(device)
    except BaseException:
        pass
    mem = dict(torch.cuda.memory_stats(device)) if torch.cuda.is_initialized() else {}
    num_ooms = mem.get("num_ooms", 0)
    if status == 0 and num_ooms > 0 and not allow_ooms:
        status = 3
    doc.update(exit=status, raised=raised, num_ooms=num_ooms, retries=mem.get("num_alloc_retries"),
               peak_reserved=mem.get("reserved_bytes.all.peak"), peak_allocated=mem.get("allocated_bytes.all.peak"),
               device_allocs=mem.get("num_device_alloc"), device_frees=mem.get("num_device_free"),
               verdict={0: "fits", 3: "oom"}.get(status, "failed"))
    if stats_path:
        with open(stats_path + ".tmp", "w") as f:
            json.dump(doc, f)
        os.replace(stats_path + ".tmp", stats_path)
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: no interpreter teardown (a stuck NCCL or dataloader thread must not hang the search).
    os._exit(status)


if __name__ == "__main__":
    main()
