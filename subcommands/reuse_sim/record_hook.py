# gpumem reuse-sim --record's start-up hook. gpumem writes this file as
# sitecustomize.py into a private directory that it puts first on the
# program's PYTHONPATH, so every Python process the program starts runs it
# (python script.py, python -m pkg, a shell script, torchrun's workers).
# It imports nothing heavy: recording starts when the program itself
# imports torch, before its first CUDA allocation, and the snapshot and
# torch.cuda.memory_stats() are written when the process ends (normal exit,
# an uncaught exception such as an OOM, SIGINT, SIGTERM). A process that
# never used CUDA through torch writes no snapshot, only its status for
# gpumem. The environment's own sitecustomize, if any, still runs.
import atexit
import json
import os
import signal
import sys
import threading
import time

_ENV = os.environ
_HERE = os.path.dirname(os.path.abspath(__file__))
_RANK_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
_SIZE_VARS = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
_LOCAL_VARS = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")


class _State:
    started = False
    done = False
    why = "exit"
    error = None
    cap = None
    torch_found = None


def _first_int(names):
    for name in names:
        value = _ENV.get(name, "")
        if value.strip().isdigit():
            return int(value)
    return None


def _targets():
    """The snapshot's and the statistics' paths, and the rank: one pair for one
    process, one per rank under a launcher (gpumem names them)."""
    rank, size = _first_int(_RANK_VARS), _first_int(_SIZE_VARS)
    if rank is not None and (size is None or size > 1):
        name = lambda var: _ENV[var].replace("{rank}", str(rank))
        return name("GPUMEM_RECORD_RANK_FILE"), name("GPUMEM_RECORD_RANK_STATS_FILE"), rank
    return _ENV["GPUMEM_RECORD_FILE"], _ENV["GPUMEM_RECORD_STATS_FILE"], rank


def _write_atomically(path, write):
    _write_all([(path, write)])


def _write_all(files):
    """Writes each (path, write) under a temporary name beside it, then
    renames them all: a file that exists is whole, and when any cannot be
    written none is renamed and no temporary is left. Only a regular file is
    replaced: a rename over /dev/null, as root, would make it a file."""
    done = []
    try:
        for path, write in files:
            if os.path.exists(path) and not os.path.isfile(path):
                raise OSError("%s exists and is not a regular file; not replaced" % path)
            tmp = "%s.tmp-%d" % (path, os.getpid())
            done.append((tmp, path))
            with open(tmp, "wb") as f:
                write(f)
    except BaseException:
        for tmp, _ in done:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        raise
    for tmp, path in done:
        os.replace(tmp, path)


def _status(doc):
    directory = _ENV.get("GPUMEM_RECORD_STATUS_DIR", "")
    if not os.path.isdir(directory):  # another node: gpumem reads the files it finds
        return
    doc["pid"] = os.getpid()
    data = json.dumps(doc).encode()
    _write_atomically(os.path.join(directory, "%d.json" % os.getpid()), lambda f: f.write(data))


def _dump(torch, doc):
    import pickle
    stats = dict(torch.cuda.memory_stats())
    snapshot = torch.cuda.memory._snapshot()
    traces = snapshot.get("device_traces", []) if isinstance(snapshot, dict) else []
    doc["events"] = sum(len(t) for t in traces)
    if doc["events"] == 0 and not stats.get("allocation.all.allocated"):
        doc["note"] = "it initialized CUDA but allocated no memory through torch"
        return
    path, stats_path, _ = _targets()
    device = torch.cuda.current_device()
    record = {"kind": "gpumem-torch-recording", "schema_version": 1, "torch_version": torch.__version__,
              "device": device, "device_name": torch.cuda.get_device_name(device), "exit": _State.why,
              "allocator": dict(_State.cap or {}, PYTORCH_CUDA_ALLOC_CONF=_ENV.get("PYTORCH_CUDA_ALLOC_CONF")),
              "memory_stats": stats}
    data = json.dumps(record, indent=1, default=str).encode()
    # The pair or nothing: "no snapshot written" must stay true.
    _write_all([(path, lambda f: pickle.dump(snapshot, f, protocol=4)), (stats_path, lambda f: f.write(data))])
    doc.update(snapshot=path, stats=stats_path, cuda_used=True)


def _finish():
    if _State.done:
        return
    _State.done = True
    # A second Ctrl-C must not cut the snapshot short.
    old = None
    if threading.current_thread() is threading.main_thread():
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        doc = {"why": _State.why, "rank": _targets()[2], "torch": "torch" in sys.modules, "cuda_used": False}
        torch = sys.modules.get("torch")
        if torch is None:
            import importlib.util
            doc["torch_found"] = importlib.util.find_spec("torch") is not None
        elif _State.error:
            doc["error"] = _State.error
        elif torch.cuda.is_initialized():
            try:
                _dump(torch, doc)
            except Exception as e:  # the program's exit status must not change
                doc["error"] = "%s: %s" % (type(e).__name__, e)
        _status(doc)
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def _on_sigterm(signum, frame):
    _State.why = "SIGTERM"
    _finish()
    # Die of the signal, as the program would have: its exit status passes through.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _cap_device(torch):
    local = _first_int(_LOCAL_VARS)
    if local is not None and local < torch.cuda.device_count():
        return local
    return torch.cuda.current_device()


def _apply_cap(torch):
    # Runs when the program first initializes CUDA (torch.cuda._lazy_call):
    # set_per_process_memory_fraction as the program could have called it.
    device = _cap_device(torch)
    total = torch.cuda.mem_get_info(device)[1]
    fraction = _ENV.get("GPUMEM_RECORD_FRACTION")
    if fraction:
        fraction = float(fraction)
    else:
        # The fraction whose allowed maximum, as PyTorch computes it
        # (size_t(fraction * double(total))), is the capacity to the byte.
        import math
        capacity = int(_ENV["GPUMEM_RECORD_CAPACITY"])
        fraction = min(1.0, capacity / float(total))
        while fraction < 1.0 and int(fraction * float(total)) < capacity:
            fraction = math.nextafter(fraction, 2.0)
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    _State.cap = {"memory_fraction": fraction, "allowed_memory_maximum": int(fraction * float(total)),
                  "device_total": total, "capped_device": device}


def _start(torch):
    if _State.started:
        return
    _State.started = True
    try:
        stacks = _ENV.get("GPUMEM_RECORD_STACKS") == "1"
        kwargs = {"enabled": "all", "context": "all" if stacks else None, "stacks": "python"}
        if _ENV.get("GPUMEM_RECORD_MAX_ENTRIES"):
            kwargs["max_entries"] = int(_ENV["GPUMEM_RECORD_MAX_ENTRIES"])
        torch.cuda.memory._record_memory_history(**kwargs)
        if _ENV.get("GPUMEM_RECORD_CAPACITY") or _ENV.get("GPUMEM_RECORD_FRACTION"):
            torch.cuda._lazy_call(lambda: _apply_cap(torch))
    except Exception as e:
        _State.error = "recording could not start: %s: %s" % (type(e).__name__, e)
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


class _TorchFinder:
    """Finds torch with the other finders, and starts recording once it has loaded."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or _State.started:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def exec_then_record(module):
            exec_module(module)
            _start(module)

        loader.exec_module = exec_then_record
        return spec


def _excepthook(kind, value, tb):
    _State.why = "exception: " + kind.__name__
    _previous_excepthook(kind, value, tb)


def _chain():
    """The environment's own sitecustomize, found on the path without this directory."""
    import importlib
    mine = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    try:
        importlib.import_module("sitecustomize")
    except ImportError as e:
        if e.name != "sitecustomize":
            raise
        if mine is not None:
            sys.modules["sitecustomize"] = mine
    finally:
        sys.path[:] = saved


if _ENV.get("GPUMEM_RECORD_FILE"):
    _previous_excepthook = sys.excepthook
    sys.excepthook = _excepthook
    sys.meta_path.insert(0, _TorchFinder())
    atexit.register(_finish)
_chain()
