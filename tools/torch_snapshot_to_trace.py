#!/usr/bin/env python3
"""Convert a PyTorch CUDA memory snapshot into a gpumem trace (CSV, v1).

    tools/torch_snapshot_to_trace.py SNAPSHOT.pickle OUT.csv [--device N]

The snapshot is what torch.cuda.memory._snapshot() returns (or what
torch.cuda.memory._dump_snapshot() writes): a pickled dict of plain Python
values, so it is loaded here with `pickle` alone; torch is not imported.
A pickle can name any Python callable for the loader to run, so a snapshot
from elsewhere could run code as whoever converts it: the loader here
refuses every global (class or function) and accepts only plain values
(dicts, lists, tuples, strings, bytes, numbers, booleans, None), which is
all a real snapshot holds. Malformed events are errors naming the event.

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
import io
import pickle
import reprlib
import struct
import sys

# Larger than any snapshot history (torch keeps at most max_entries events
# per device, a few hundred bytes each); a bound on what a file may make the
# loader build in memory.
MAX_SNAPSHOT_BYTES = 4 << 30


class SnapshotError(Exception):
    pass


class _PlainValuesUnpickler(pickle._Unpickler):  # pylint: disable=protected-access
    """Builds plain values only: any GLOBAL / STACK_GLOBAL opcode (a class or
    function to call, the way a pickle runs code) is refused.

    The pure-Python unpickler, not the C one: the C unpickler keeps its memo
    in an array indexed by the pickle's own PUT numbers, so a 10-byte file
    with LONG_BINPUT 0x30000000 makes it allocate and zero 12 GB (50 s; found
    by fuzz/fuzz_torch_snapshot.py). The Python one keeps a dict: memory
    follows the file's size. It loads a 7 MB, 100k-event snapshot in about
    4 s instead of 0.8 s, a fair price for a one-off conversion.

    Its BYTEARRAY8 allocates the length the file declares before reading it
    (an 11 GB bytearray for a 631-byte input, also found by the fuzzer), so
    that opcode is bounded by the size of the input."""

    def __init__(self, data):
        super().__init__(io.BytesIO(data))
        self._input_size = len(data)

    def _load_bytearray8(self):
        (size,) = struct.unpack("<Q", self.read(8))
        if size > self._input_size:
            raise pickle.UnpicklingError(f"BYTEARRAY8 of {size} bytes in a {self._input_size}-byte input")
        data = self.read(size)
        if len(data) != size:
            raise pickle.UnpicklingError("BYTEARRAY8: input truncated")
        self.append(bytearray(data))

    dispatch = dict(pickle._Unpickler.dispatch)  # pylint: disable=protected-access
    dispatch[pickle.BYTEARRAY8[0]] = _load_bytearray8

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"refers to {module}.{name}: a memory snapshot holds plain values only, refusing to load code")


def loads_snapshot(data):
    """Unpickles snapshot bytes with plain values only; SnapshotError otherwise."""
    try:
        return _PlainValuesUnpickler(data).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, OverflowError, UnicodeDecodeError, RecursionError, MemoryError,
            struct.error) as e:
        # Truncated or corrupt pickles surface as any of these from the
        # unpickler (a bad memo key, a short string, an unknown protocol...).
        raise SnapshotError(f"cannot load snapshot: {type(e).__name__}: {e}") from None


def _device_trace(snapshot, device):
    if not isinstance(snapshot, dict) or "device_traces" not in snapshot:
        raise SnapshotError("not a memory snapshot: no 'device_traces' (was memory history recorded?)")
    traces = snapshot["device_traces"]
    if not isinstance(traces, (list, tuple)):
        raise SnapshotError(f"'device_traces': expected a list, found {type(traces).__name__}")
    if device < 0 or device >= len(traces):
        raise SnapshotError(f"device {device} not in snapshot ({len(traces)} device trace(s))")
    trace = traces[device]
    if not isinstance(trace, (list, tuple)):
        raise SnapshotError(f"device trace {device}: expected a list, found {type(trace).__name__}")
    return trace


def _integer(e, index, key, default=None):
    """Event field `key` as a non-negative int (a missing one is `default`)."""
    value = e.get(key, default)
    if value is None and default is not None:
        value = default  # torch writes stream None on some versions
    # bool is an int subclass, and a float or a numeric string would be a
    # corrupt snapshot: only ints are addresses, sizes and streams.
    if type(value) is not int or value < 0:
        raise SnapshotError(f"event {index} ({reprlib.repr(e.get('action'))}): '{key}' is {reprlib.repr(value)}, "
                            "not a non-negative integer")
    return value


def convert(snapshot, out, device=0, source="snapshot"):
    """Writes the gpumem trace of `device` to the text stream `out`.

    Returns a summary dict with counts, for cross-checks.
    """
    trace = _device_trace(snapshot, device)
    for index, e in enumerate(trace):
        if not isinstance(e, dict):
            raise SnapshotError(f"event {index}: expected a dict, found {type(e).__name__}")
    counts = {}
    streams = sorted({_integer(e, i, "stream", 0) for i, e in enumerate(trace) if e.get("action") == "alloc"})
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
    for index, e in enumerate(trace):
        action = e.get("action")
        if not isinstance(action, str):
            raise SnapshotError(f"event {index}: 'action' is {action!r}, not a string")
        counts[action] = counts.get(action, 0) + 1
        if action == "alloc":
            addr = _integer(e, index, "addr")
            size = _integer(e, index, "size")
            if size == 0:
                raise SnapshotError(f"event {index}: alloc of 0 bytes")
            if addr in live:
                raise SnapshotError(f"event {index}: alloc at 0x{addr:x} which is already live (corrupt trace?)")
            if free_ids:
                ident = heapq.heappop(free_ids)
            else:
                ident = next_id
                next_id += 1
            live[addr] = (ident, size)
            live_bytes += size
            peak_live = max(peak_live, live_bytes)
            out.write(f"alloc,{ident},{size},{stream_index[_integer(e, index, 'stream', 0)]},\n")
        elif action == "free_completed":
            addr = _integer(e, index, "addr")
            entry = live.pop(addr, None)
            if entry is None:
                # Allocated before history recording started, or the ring
                # buffer dropped its alloc: nothing to replay.
                skipped_frees += 1
                continue
            ident, size = entry
            if _integer(e, index, "size", size) != size:
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
            data = f.read(MAX_SNAPSHOT_BYTES + 1)
    except OSError as e:
        raise SnapshotError(f"{path}: {e.strerror}") from None
    if len(data) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(f"{path}: larger than {MAX_SNAPSHOT_BYTES >> 30} GiB: not a memory snapshot")
    try:
        return loads_snapshot(data)
    except SnapshotError as e:
        raise SnapshotError(f"{path}: {e}") from None


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
