#!/usr/bin/env python3
"""Fuzz target for the third trace format: PyTorch memory snapshots, which
tools/torch_snapshot_to_trace.py reads (a pickle, so Python, not libFuzzer;
atheris, libFuzzer's Python driver, is not packaged by Debian).

    fuzz/fuzz_torch_snapshot.py CORPUS_DIR [--seconds S] [--runs N]
                                [--artifacts DIR] [--seed N]

Each execution takes one input and runs what the converter runs on a file:
loads_snapshot (the plain-values unpickler) and, when that succeeds,
convert() into a string. The only outcome allowed besides success is
SnapshotError; any other exception, an input that takes over 5 s, or a
global the unpickler let through (a sentinel records whether one ran) is a
finding: the input is written to ARTIFACTS/crash-SHA1 and the run exits 1.

Inputs come from two generators, half each, without coverage feedback:
  - mutation: 1-8 of bit flips, interesting bytes, pickle opcodes, inserted,
    deleted and duplicated ranges and splices, applied to corpus entries
    (every seed file, and every generated snapshot that converted);
  - structure: a random snapshot (device traces of events whose actions,
    addresses, sizes and streams are drawn from valid and invalid values),
    pickled with a random protocol, then sometimes mutated.
Prints the last line "stat::number_of_executed_units: N" as libFuzzer does,
so fuzz/run.sh counts both kinds of target alike. At most 64 KiB an input,
like the libFuzzer targets.
"""

import argparse
import hashlib
import io
import os
import pickle
import random
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import torch_snapshot_to_trace as converter  # noqa: E402

MAX_INPUT = 64 * 1024
PER_INPUT_SECONDS = 5

# A global that a malicious pickle could name; the plain-values unpickler must
# never call it.
SENTINEL_CALLS = []


def sentinel(*args):
    SENTINEL_CALLS.append(args)
    return {"device_traces": [[]]}


class Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise Timeout()


def execute(data):
    snapshot = converter.loads_snapshot(data)
    converter.convert(snapshot, io.StringIO(), 0, "fuzz")


ACTIONS = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom", "snapshot",
           "segment_map", "", "ALLOC"]
INTERESTING_INTS = [0, 1, -1, 511, 512, 513, 1 << 20, (1 << 20) + 1, 2 << 20, (1 << 31) - 1, 1 << 31,
                    (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 1 << 64, 10 ** 40]


def random_value(rng):
    choice = rng.randrange(10)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.random() * 1e6
    if choice == 3:
        return str(rng.choice(INTERESTING_INTS))
    if choice == 4:
        return [rng.randrange(4)]
    if choice == 5:
        return {"x": 1}
    if choice == 6:
        return b"\x00\x01"
    return rng.choice(INTERESTING_INTS)


def random_snapshot(rng):
    """A snapshot-shaped value: mostly valid events, some fields wrong."""
    addrs = [rng.randrange(1, 1 << 40) & ~511 for _ in range(rng.randrange(1, 12))]
    traces = []
    for _ in range(rng.choice([1, 1, 1, 2, 0])):
        events = []
        for _ in range(rng.randrange(0, 40)):
            e = {"action": rng.choice(ACTIONS[:6]) if rng.random() < 0.9 else rng.choice(ACTIONS + [None, 3]),
                 "addr": rng.choice(addrs), "size": rng.choice([512, 4096, 1 << 20, 3, 20 << 20]),
                 "stream": rng.choice([0, 0, 0, 94000000000, None]), "time_us": rng.randrange(1 << 40),
                 "frames": [] if rng.random() < 0.8 else [{"filename": "x.py", "line": 3, "name": "f"}]}
            if rng.random() < 0.15:
                e[rng.choice(["addr", "size", "stream", "action"])] = random_value(rng)
            if rng.random() < 0.05:
                del e[rng.choice(["addr", "size", "stream"])]
            events.append(e if rng.random() > 0.02 else random_value(rng))
        traces.append(events)
    snapshot = {"segments": [], "device_traces": traces}
    if rng.random() < 0.05:
        snapshot["device_traces"] = random_value(rng)
    if rng.random() < 0.03:
        snapshot = random_value(rng)
    return snapshot


def structured_input(rng):
    return pickle.dumps(random_snapshot(rng), protocol=rng.randrange(0, pickle.HIGHEST_PROTOCOL + 1))


def evil_input(rng):
    """A pickle that names a global (the sentinel, or os.system): must be refused."""
    if rng.random() < 0.5:
        class Evil:
            def __reduce__(self):
                return (sentinel, ("called",))
        Evil.__module__ = __name__
        return pickle.dumps({"device_traces": [[Evil()]]}, protocol=rng.randrange(0, pickle.HIGHEST_PROTOCOL + 1))
    # GLOBAL 'os system', then a string, TUPLE1, REDUCE: what "python -c
    # 'import pickle,os; pickle.dumps(...)'" exploits look like, never run.
    return b"cos\nsystem\n(S'true'\ntR."


PICKLE_OPCODES = [op.code.encode("latin-1") for op in __import__("pickletools").opcodes]


def mutate(data, rng, corpus):
    data = bytearray(data)
    for _ in range(rng.randrange(1, 9)):
        kind = rng.randrange(8)
        pos = rng.randrange(len(data) + 1)
        if kind == 0 and data:
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            data[rng.randrange(len(data))] = rng.choice([0, 1, 0x7f, 0x80, 0xff, ord("."), ord("("), ord("0")])
        elif kind == 2:
            data[pos:pos] = rng.choice(PICKLE_OPCODES)
        elif kind == 3:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif kind == 4 and data:
            end = min(len(data), pos + rng.randrange(1, 64))
            del data[pos:end]
        elif kind == 5 and data:
            start = rng.randrange(len(data))
            chunk = data[start:start + rng.randrange(1, 64)]
            data[pos:pos] = chunk
        elif kind == 6 and corpus:
            other = rng.choice(corpus)
            cut = rng.randrange(len(other) + 1)
            data = data[:pos] + bytearray(other[cut:])
        elif kind == 7:
            data[pos:pos] = (rng.choice(INTERESTING_INTS) & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(data[:MAX_INPUT])


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Fuzz tools/torch_snapshot_to_trace.py's reader of PyTorch memory snapshots (pickles).")
    parser.add_argument("corpus", help="seed directory (read; never written)")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--runs", type=int, default=0, help="stop after N executions (0: no limit)")
    parser.add_argument("--artifacts", default=".", help="where a finding's input is written")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    rng = random.Random(seed)
    if not os.path.isdir(args.corpus):
        parser.error(f"{args.corpus}: not a directory (the seed corpus, e.g. fuzz/corpus/fuzz_torch_snapshot)")
    corpus = []
    for name in sorted(os.listdir(args.corpus)):
        with open(os.path.join(args.corpus, name), "rb") as f:
            corpus.append(f.read()[:MAX_INPUT])
    if not corpus:
        corpus.append(structured_input(rng))
    print(f"fuzz_torch_snapshot: seed {seed}, {len(corpus)} corpus inputs", file=sys.stderr)

    signal.signal(signal.SIGALRM, _on_alarm)
    start = time.monotonic()
    deadline = start + args.seconds
    executed = 0
    accepted = 0
    last_report = start
    finding = None
    # The corpus inputs first, as libFuzzer does, then generated ones.
    pending = list(corpus)
    while True:
        if pending:
            data = pending.pop()
        else:
            if executed % 256 == 0 and time.monotonic() >= deadline:
                break
            if args.runs and executed >= args.runs:
                break
            r = rng.random()
            if r < 0.45:
                data = mutate(rng.choice(corpus), rng, corpus)
            elif r < 0.98:
                data = structured_input(rng)
                if rng.random() < 0.3:
                    data = mutate(data, rng, corpus)
            else:
                data = evil_input(rng)
        calls_before = len(SENTINEL_CALLS)
        signal.setitimer(signal.ITIMER_REAL, PER_INPUT_SECONDS)
        try:
            execute(data)
            accepted += 1
            if len(corpus) < 4096 and rng.random() < 0.01:
                corpus.append(data)  # a valid input to mutate further
        except converter.SnapshotError:
            pass
        except Timeout:
            finding = ("timeout", f"over {PER_INPUT_SECONDS} s", data)
        except BaseException as e:  # noqa: B902  anything else is the finding
            if isinstance(e, KeyboardInterrupt):
                raise
            finding = ("crash", traceback.format_exc(), data)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if finding is None and len(SENTINEL_CALLS) != calls_before:
            finding = ("crash", "a global in the pickle was called", data)
        executed += 1
        if finding:
            break
        now = time.monotonic()
        if now - last_report >= 10:
            print(f"#{executed} execs/s {executed / (now - start):.0f} accepted {accepted}", file=sys.stderr)
            last_report = now

    elapsed = time.monotonic() - start
    if finding:
        kind, what, data = finding
        os.makedirs(args.artifacts, exist_ok=True)
        path = os.path.join(args.artifacts, f"{kind}-{hashlib.sha1(data).hexdigest()}")
        with open(path, "wb") as f:
            f.write(data)
        print(f"fuzz_torch_snapshot: FINDING ({kind}) after {executed} executions: {what}\ninput: {path}",
              file=sys.stderr)
    print(f"fuzz_torch_snapshot: {executed} executions in {elapsed:.0f} s, {accepted} converted", file=sys.stderr)
    print(f"stat::number_of_executed_units: {executed}", file=sys.stderr)
    return 1 if finding else 0


if __name__ == "__main__":
    sys.exit(main())
