#!/usr/bin/env python3
"""Convert a PyTorch CUDA memory snapshot into a gpumem trace (CSV, v1).

    tools/torch_snapshot_to_trace.py SNAPSHOT.pickle OUT.csv [--device N]

The snapshot is what torch.cuda.memory._snapshot() returns (or what
torch.cuda.memory._dump_snapshot() writes): a pickled dict of plain Python
values, so it is loaded here with `pickle` alone; torch is not imported.

Only the allocator's history in snapshot["device_traces"][N] is used:

* `alloc` becomes an `alloc` line. PyTorch records the size the caller asked
  for (DeviceCachingAllocator::alloc_found_block passes `orig_size` to
  record_trace), which is what `gpumem reuse-sim` needs to replay the
  allocator's own rounding.
* `free_completed` becomes a `free` line (the block is back in the cache; a
  `free_requested` of a block used on other streams completes later).
* addresses become small integer ids, reused after a free; streams become
  small integers in the order of their raw values (the allocator orders its
  free blocks by stream value first).
* segment_alloc / segment_free / oom are not replayed; they are counted and
  reported on stderr so a replay can be cross-checked.

Exit status: 0 ok, 1 unreadable or unexpected snapshot, 2 bad arguments.
"""

import argparse
import heapq
import pickle
import sys


class SnapshotError(Exception):
    pass


def _device_trace(snapshot, device):
    if not isinstance(snapshot, dict) or "device_traces" not in snapshot:
        raise SnapshotError("not a memory snapshot: no 'device_traces' (was memory history recorded?)")
    traces = snapshot["device_traces"]
    if device < 0 or device >= len(traces):
        raise SnapshotError(f"device {device} not in snapshot ({len(traces)} device trace(s))")
    return traces[device]


def convert(snapshot, out, device=0, source="snapshot"):
    """Writes the gpumem trace of `device` to the text stream `out`.

    Returns a summary dict with counts, for cross-checks.
    """
    trace = _device_trace(snapshot, device)
    counts = {}
    streams = sorted({int(e.get("stream", 0) or 0) for e in trace if e.get("action") == "alloc"})
    stream_index = {s: i for i, s in enumerate(streams)}

    live = {}  # addr -> (id, size)
    free_ids = []  # min-heap of ids free for reuse
    next_id = 0
    skipped_frees = 0
    size_mismatches = 0
    peak_live = live_bytes = 0

    out.write("# gpumem-trace v1\n")
    out.write(f"# converted from {source} (PyTorch memory snapshot, device {device})\n")
    out.write("action,id,size,stream,tag\n")
    for e in trace:
        action = e.get("action")
        counts[action] = counts.get(action, 0) + 1
        if action == "alloc":
            addr = int(e["addr"])
            size = int(e["size"])
            if addr in live:
                raise SnapshotError(f"alloc at 0x{addr:x} which is already live (corrupt trace?)")
            if free_ids:
                ident = heapq.heappop(free_ids)
            else:
                ident = next_id
                next_id += 1
            live[addr] = (ident, size)
            live_bytes += size
            peak_live = max(peak_live, live_bytes)
            out.write(f"alloc,{ident},{size},{stream_index[int(e.get('stream', 0) or 0)]},\n")
        elif action == "free_completed":
            addr = int(e["addr"])
            entry = live.pop(addr, None)
            if entry is None:
                # Allocated before history recording started, or the ring
                # buffer dropped its alloc: nothing to replay.
                skipped_frees += 1
                continue
            ident, size = entry
            if int(e.get("size", size)) != size:
                size_mismatches += 1
            live_bytes -= size
            heapq.heappush(free_ids, ident)
            out.write(f"free,{ident},{size},,\n")
    return {
        "events": len(trace),
        "actions": counts,
        "allocs": counts.get("alloc", 0),
        "frees": counts.get("free_completed", 0) - skipped_frees,
        "skipped_frees": skipped_frees,
        "size_mismatches": size_mismatches,
        "live_at_end": len(live),
        "peak_live_bytes": peak_live,
        "streams": len(streams),
        "segment_alloc": counts.get("segment_alloc", 0),
        "segment_free": counts.get("segment_free", 0),
        "oom": counts.get("oom", 0),
    }


def load_snapshot(path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ModuleNotFoundError) as e:
        raise SnapshotError(f"{path}: cannot load snapshot: {e}") from e


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Convert a PyTorch CUDA memory snapshot (pickle) into a gpumem trace CSV.")
    parser.add_argument("snapshot", help="pickle from torch.cuda.memory._dump_snapshot()")
    parser.add_argument("out", help="gpumem trace CSV to write ('-' for stdout)")
    parser.add_argument("--device", type=int, default=0, help="device trace to convert (default 0)")
    args = parser.parse_args(argv)
    try:
        snapshot = load_snapshot(args.snapshot)
        if args.out == "-":
            summary = convert(snapshot, sys.stdout, args.device, args.snapshot)
        else:
            with open(args.out, "w") as out:
                summary = convert(snapshot, out, args.device, args.snapshot)
    except (SnapshotError, OSError) as e:
        print(f"torch_snapshot_to_trace: error: {e}", file=sys.stderr)
        return 1
    print(f"torch_snapshot_to_trace: {summary['allocs']} allocs, {summary['frees']} frees, "
          f"{summary['skipped_frees']} frees of unknown blocks skipped, {summary['live_at_end']} live at end; "
          f"snapshot has {summary['segment_alloc']} segment_alloc, {summary['segment_free']} segment_free, "
          f"{summary['oom']} oom", file=sys.stderr)
    if summary["oom"]:
        print("torch_snapshot_to_trace: warning: the trace holds OOMs; failed requests are not replayed",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
