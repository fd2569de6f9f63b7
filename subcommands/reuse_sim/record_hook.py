# gpumem reuse-sim --record's start-up hook. gpumem writes this file as
# sitecustomize.py into a private directory that it puts first on the
# program's PYTHONPATH, so every Python process the program starts runs it
# (python script.py, python -m pkg, a shell script, torchrun's workers).
# It imports nothing heavy: recording starts when the program itself
# imports torch, before its first CUDA allocation, and the snapshot and
# torch.cuda.memory_stats() are written when the process ends (normal exit,
# an uncaught exception such as an OOM, SIGINT, SIGTERM). A process that
# never used CUDA through torch writes no snapshot, only its status for
# gpumem. Each process writes its own pair of files: by rank under a
# launcher, and by the order in which processes (of a rank) first used CUDA
# (FILE, then FILE.procN), claimed in gpumem's status directory. The
# program's own set_per_process_memory_fraction calls are recorded (the
# last one for a device is the cap in force), and both names of the
# allocator settings' variable with torch's version: which one torch read
# is gpumem's to say (base/record_plan's read_alloc_conf, the one place).
# The program's calls that change how the allocator serves requests are
# recorded with their place in the history (the number of its entries so
# far, as torch.cuda.memory_stats counts them, which is cheap):
# torch.cuda.memory._set_allocator_settings, use_mem_pool's contexts, CUDA
# graph captures and the deletion of a MemPool.
# The OutOfMemoryError exceptions that reach the program's Python code are
# counted (Python 3.12 and later, sys.monitoring): torch.cuda.memory_stats'
# num_ooms also counts requests PyTorch refused and retried smaller itself
# (cuDNN's workspace search), which the program never saw.
# The environment's own sitecustomize, if any, still runs. A run forked
# from the fork server (fork_server.py) runs this file itself, torch
# already imported.
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
    finishing = False  # _finish is writing the files (a signal's handler may run inside it)
    why = "exit"
    error = None
    torch_found = None
    # Every set_per_process_memory_fraction of this process, gpumem's and
    # the program's, in the order made: the last one for a device is in force.
    fraction_calls = []
    # This process's place among those that initialized CUDA (1: the
    # first), claimed once per process, for its file names.
    order = None
    order_pid = None
    # torch.cuda.OutOfMemoryError exceptions that reached Python code, each
    # counted once; None: not countable here (Python before 3.12).
    program_ooms = None
    oom_class = None
    # The program's calls that change how the allocator serves requests,
    # in the order made, each with its place in the history (_note_call).
    allocator_calls = []
    # What the hook could not follow (a wrapper that could not be put in
    # place, a call it could not note), at most _MAX_HOOK_ERRORS distinct
    # lines: written into the recording so that gpumem names the cause of
    # a replay that differs, instead of the hook failing silently.
    hook_errors = []
    # Graph captures begun without a pool: PyTorch numbers their pools
    # (N, 0) from 1, in this order.
    graph_pools_made = 0
    # The backends of the process groups the program initialized ("nccl",
    # "gloo", "cpu:gloo,cuda:nccl"), each once.
    process_groups = []
    # What this run held as late as NCCL may free it (_hold_late_frees):
    # {"what", "bytes", "rebuild_net_bytes"} each.
    held_late = []


_MAX_HOOK_ERRORS = 20


def _hook_error(where, e):
    line = "%s: %s: %s" % (where, type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    if line not in _State.hook_errors and len(_State.hook_errors) < _MAX_HOOK_ERRORS:
        _State.hook_errors.append(line)


def _first_int(names):
    for name in names:
        value = _ENV.get(name, "")
        if value.strip().isdigit():
            return int(value)
    return None


def _rank():
    rank, size = _first_int(_RANK_VARS), _first_int(_SIZE_VARS)
    return rank if rank is not None and (size is None or size > 1) else None


def _claim_order():
    """This process's place among the processes of the run (of its rank, under
    a launcher) that initialized CUDA: a file claimed in gpumem's status
    directory, so that no two processes ever write the same snapshot. A
    forked child claims its own."""
    if _State.order is not None and _State.order_pid == os.getpid():
        return _State.order
    directory = _ENV.get("GPUMEM_RECORD_STATUS_DIR", "")
    rank = _rank()
    key = "main" if rank is None else "rank%d" % rank
    order = 1
    if os.path.isdir(directory):  # another node: its ranks are its own
        while True:
            try:
                os.close(os.open(os.path.join(directory, "claim-%s-%d" % (key, order)), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                break
            except FileExistsError:
                order += 1
    _State.order, _State.order_pid = order, os.getpid()
    return order


def _targets():
    """The snapshot's and the statistics' paths, and the rank: one pair per
    process, named by gpumem (its templates): FILE for the first process of
    the run (of each rank under a launcher) that initialized CUDA, FILE with
    .procN for the N-th."""
    rank = _rank()
    order = _claim_order()
    prefix = "GPUMEM_RECORD_" + ("" if rank is None else "RANK_") + ("" if order == 1 else "PROC_")
    name = lambda var: _ENV[var].replace("{rank}", str(rank)).replace("{proc}", str(order))
    return name(prefix + "FILE"), name(prefix + "STATS_FILE"), rank


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
    # Both names as set (which one torch read is gpumem's to say, from
    # torch_version), and the cap in force: the last call for this device.
    allocator = {"PYTORCH_ALLOC_CONF": _ENV.get("PYTORCH_ALLOC_CONF"), "PYTORCH_CUDA_ALLOC_CONF": _ENV.get("PYTORCH_CUDA_ALLOC_CONF")}
    calls = [c for c in _State.fraction_calls if c["device"] == device] or _State.fraction_calls
    if calls:
        last = calls[-1]
        allocator.update(memory_fraction=last["fraction"], allowed_memory_maximum=last["allowed_memory_maximum"],
                         device_total=last["device_total"], capped_device=last["device"], cap_set_by=last["set_by"])
    allocator["memory_fraction_calls"] = _State.fraction_calls
    allocator["allocator_calls"] = [c for c in _State.allocator_calls if c["device"] in (None, device)]
    allocator["hook_errors"] = _State.hook_errors
    try:
        device_total = int(torch.cuda.mem_get_info(device)[1])
    except Exception:
        device_total = None
    record = {"kind": "gpumem-torch-recording", "schema_version": 3, "torch_version": torch.__version__,
              "device": device, "device_name": torch.cuda.get_device_name(device), "device_total": device_total, "exit": _State.why,
              "pid": os.getpid(), "process": _State.order, "allocator": allocator, "memory_stats": stats,
              "program_ooms": _State.program_ooms, "process_groups": _State.process_groups, "held_late": _State.held_late, "python_version": "%d.%d.%d" % sys.version_info[:3]}
    data = json.dumps(record, indent=1, default=str).encode()
    # The pair or nothing: "no snapshot written" must stay true.
    _write_all([(path, lambda f: pickle.dump(snapshot, f, protocol=4)), (stats_path, lambda f: f.write(data))])
    doc.update(snapshot=path, stats=stats_path, cuda_used=True, process=_State.order, torch_version=torch.__version__,
               alloc_conf=allocator["PYTORCH_ALLOC_CONF"], cuda_alloc_conf=allocator["PYTORCH_CUDA_ALLOC_CONF"],
               fraction_calls=_State.fraction_calls)


def _finish():
    if _State.done:
        return
    # finishing before done: a SIGTERM handled between the two would find
    # the files "done" before they were written (_on_sigterm).
    _State.finishing = True
    _State.done = True
    # A second Ctrl-C or SIGTERM must not cut the snapshot short: coreutils'
    # timeout signals gpumem (which passes it on) and then the whole group.
    old = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            old[signum] = signal.signal(signum, signal.SIG_IGN)
    try:
        doc = {"why": _State.why, "rank": _rank(), "torch": "torch" in sys.modules, "cuda_used": False}
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
        try:
            _status(doc)
        except OSError:  # gpumem's run is over and its directory gone: a straggler (multiprocessing's resource tracker)
            pass
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
        _State.finishing = False


def _on_sigterm(signum, frame):
    # Nothing to add while a _finish runs or once one has: a second SIGTERM
    # can run this handler inside the first one's _finish, before _finish
    # ignores the signal (timeout sends it to gpumem, which passes it on,
    # and to the whole group), and gpumem's SIGTERM can come while the exit
    # handlers run after timeout's SIGINT. The first ends the process once
    # the files are written; the exit already under way ends it after.
    if _State.finishing or _State.done:
        return
    _State.finishing = True
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


def _device_index(torch, device):
    if device is None:
        return torch.cuda.current_device()
    index = getattr(torch.cuda, "_get_device_index", None)
    if index is not None:
        return index(device, optional=True)
    return int(getattr(device, "index", device))


def _note_fraction(torch, fraction, device, set_by):
    total = torch.cuda.mem_get_info(device)[1]
    _State.fraction_calls.append({"device": device, "fraction": fraction, "allowed_memory_maximum": int(fraction * float(total)),
                                  "device_total": total, "set_by": set_by, "time_us": int(time.time() * 1e6)})


def _watch_fraction(torch):
    """The program's own set_per_process_memory_fraction, wrapped: recorded,
    then done as it asked (it replaces gpumem's cap, as it would any)."""
    original = torch.cuda.set_per_process_memory_fraction

    def set_per_process_memory_fraction(fraction, device=None):
        result = original(fraction, device)
        try:
            _note_fraction(torch, float(fraction), _device_index(torch, device), "program")
        except Exception:  # the program's call itself succeeded: never fail it
            pass
        return result

    set_per_process_memory_fraction.__wrapped__ = original
    set_per_process_memory_fraction.__doc__ = original.__doc__
    torch.cuda.set_per_process_memory_fraction = set_per_process_memory_fraction
    memory = getattr(torch.cuda, "memory", None)
    if getattr(memory, "set_per_process_memory_fraction", None) is original:
        memory.set_per_process_memory_fraction = set_per_process_memory_fraction
    return original


def _watch_process_groups(torch):
    """The program's torch.distributed.init_process_group, wrapped: the
    backend of its default group noted (the program may destroy it before
    the end). Under NCCL a collective's tensors stay allocated until the
    process group's watchdog thread sees its work complete, as late as it
    polls: a run's peak may hang on that thread's timing."""
    # torch imports it itself; never imported here (a program without it
    # pays nothing).
    dist = sys.modules.get("torch.distributed") or getattr(torch, "distributed", None)
    if dist is None:
        return
    original = getattr(dist, "init_process_group", None)
    if original is None or not dist.is_available():
        return

    def init_process_group(*args, **kwargs):
        result = original(*args, **kwargs)
        try:
            backend = str(dist.get_backend())
            if backend not in _State.process_groups:
                _State.process_groups.append(backend)
        except Exception as e:  # the program's call itself succeeded: never fail it
            _hook_error("noting the process group's backend", e)
        return result

    init_process_group.__wrapped__ = original
    init_process_group.__doc__ = original.__doc__
    dist.init_process_group = init_process_group
    c10d = getattr(dist, "distributed_c10d", None)
    if getattr(c10d, "init_process_group", None) is original:
        c10d.init_process_group = init_process_group


# How long the watchdog of an NCCL process group may take to see a finished
# collective: it polls every 100 ms (ProcessGroupNCCL's
# kWatchdogThreadSleepMillis); the rest is slack for a loaded host.
_WATCHDOG_SETTLE_S = 0.3
# The forwards a rebuild is waited for (each wait costs the above): the
# second, or a few more where the first steps accumulate without a sync.
_MAX_SETTLES = 4


def _hold_late_frees(torch):
    """max-batch's runs (GPUMEM_RECORD_HOLD_LATE=1): what NCCL may free late,
    held as late as it may be, so that every run, and so every answer,
    stands for the worst case instead of the run's luck.

    Under NCCL a collective's tensors stay allocated until its process
    group's watchdog thread sees the work done (torch 2.11 stashes them
    there "for allocator safety"). DDP drops tensors it handed to a
    collective once: its first buckets, replaced after the first step
    (the bucket rebuild, at the second forward). When the watchdog has
    not polled by then, they stay allocated into the second step: a DDP
    MLP under one rank on an H200 ran out of memory 5 times in 36 with
    exactly its gradients' size more allocated (bench/ddp-variance.sh).
    So at the rebuild this waits until the GPU is done and the watchdog
    has polled (the old buckets are then freed at the rebuild itself,
    never twice counted), and holds their size itself until the next
    step's forward: the second step runs as in the latest release."""
    parallel = getattr(getattr(torch, "nn", None), "parallel", None)
    ddp = getattr(parallel, "DistributedDataParallel", None)
    original = getattr(ddp, "_pre_forward", None)
    if original is None:
        return
    dist = sys.modules.get("torch.distributed") or getattr(torch, "distributed", None)

    def nccl(module):
        try:
            return "nccl" in str(dist.get_backend(getattr(module, "process_group", None)))
        except Exception:
            return False

    def bucket_bytes(module):
        inner = getattr(module, "module", module)
        return sum(p.numel() * p.element_size() for p in inner.parameters() if p.requires_grad)

    def _pre_forward(self, *args, **kwargs):
        state = self.__dict__.setdefault("_gpumem_hold", {"forwards": 0, "held": None, "done": False})
        if state["done"] or not torch.is_grad_enabled():
            return original(self, *args, **kwargs)
        state["held"] = None  # the step after the rebuild's: the latest the watchdog frees them
        # Done once rebuilt, when not NCCL, or when no rebuild came in the
        # first steps (find_unused_parameters: DDP never rebuilds).
        if getattr(self, "_has_rebuilt_buckets", False) or state["forwards"] > 0 and not nccl(self) or state["forwards"] >= _MAX_SETTLES:
            state["done"] = True
            return original(self, *args, **kwargs)
        state["forwards"] += 1
        if state["forwards"] > 1:  # a rebuild may come now: the first step's collectives seen done first
            torch.cuda.synchronize()
            time.sleep(_WATCHDOG_SETTLE_S)
        before = torch.cuda.memory_allocated()
        result = original(self, *args, **kwargs)
        if getattr(self, "_has_rebuilt_buckets", False):
            size = bucket_bytes(self)
            cap = int(getattr(self, "bucket_bytes_cap", 0) or size) or 1
            device = next(p.device for p in getattr(self, "module", self).parameters())
            chunks = [min(cap, size - at) for at in range(0, size, cap)]
            state["held"] = [torch.empty(n, dtype=torch.uint8, device=device) for n in chunks]
            # The rebuild's own net change: 0 when the old buckets were freed
            # at it (what the wait above is for), their size when held.
            _State.held_late.append({"what": "ddp_first_buckets", "bytes": size,
                                     "rebuild_net_bytes": torch.cuda.memory_allocated() - before - size})
        return result

    _pre_forward.__wrapped__ = original
    ddp._pre_forward = _pre_forward


def _history_position(torch):
    """(device, entries of its allocation history so far): alloc, free_requested,
    free_completed, segment and oom entries, as memory_stats counts them
    (each counter moves with one entry). Before CUDA is initialized:
    (None, 0), every device's start."""
    if not torch.cuda.is_initialized():
        return None, 0
    device = torch.cuda.current_device()
    s = torch.cuda.memory_stats(device)
    keys = ("allocation.all.allocated", "allocation.all.freed", "active.all.freed", "num_device_alloc", "num_device_free", "num_ooms")
    return device, sum(int(s.get(k, 0)) for k in keys)


def _note_call(torch, call, **fields):
    try:
        device, position = _history_position(torch)
        fields.update(call=call, device=device, position=position)
        _State.allocator_calls.append(fields)
    except Exception as e:  # the program's call goes on unrecorded rather than fail
        _hook_error(call, e)


def _pool_id(pool):
    """A pool's id as two ints, from what PyTorch hands out: a MemPool's
    .id (a tuple), a graph's pool() (a tuple, or in some versions a
    _POOL_HANDLE object holding one)."""
    for candidate in (pool, getattr(pool, "id", None), getattr(pool, "value", None), getattr(pool, "handle", None)):
        if candidate is None:
            continue
        try:
            values = [int(v) for v in candidate]
        except (TypeError, ValueError):
            continue
        if len(values) == 2:
            return values
    raise TypeError("a pool id of type %s" % type(pool).__name__)


def _watch_allocator_calls(torch):
    """Wraps the calls that change how the allocator serves requests: each is
    recorded, then done as the program asked (its result and errors pass)."""
    import contextlib
    import functools
    import weakref
    memory = getattr(torch.cuda, "memory", None)
    settings = getattr(memory, "_set_allocator_settings", None)
    if settings is not None:
        @functools.wraps(settings)
        def _set_allocator_settings(env, *args, **kwargs):
            _note_call(torch, "set_allocator_settings", settings=str(env))
            return settings(env, *args, **kwargs)
        memory._set_allocator_settings = _set_allocator_settings
    use_mem_pool = getattr(torch.cuda, "use_mem_pool", None)
    if use_mem_pool is not None:
        @functools.wraps(use_mem_pool)
        @contextlib.contextmanager
        def _use_mem_pool(pool, *args, **kwargs):
            pool_id = _pool_id(pool.id)
            with use_mem_pool(pool, *args, **kwargs):
                _note_call(torch, "use_mem_pool_begin", pool=pool_id)
                try:
                    yield
                finally:
                    _note_call(torch, "use_mem_pool_end", pool=pool_id)
        torch.cuda.use_mem_pool = _use_mem_pool
        if getattr(memory, "use_mem_pool", None) is use_mem_pool:
            memory.use_mem_pool = _use_mem_pool
    mem_pool = getattr(torch.cuda, "MemPool", None)
    if isinstance(mem_pool, type):
        init = mem_pool.__init__

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            try:
                # Runs just before PyTorch's ~MemPool (releasePool, then
                # emptyCache of the pool); not at exit, after the snapshot.
                weakref.finalize(self, _note_call, torch, "pool_release", pool=_pool_id(self.id)).atexit = False
            except Exception as e:
                _hook_error("MemPool: its release", e)
        mem_pool.__init__ = __init__
    # A graph's pool becomes freeable when the last graph captured into it
    # is reset or deleted (releasePool: its use count reaches 0).
    users = {}

    def graph_released(pool_id):
        users[pool_id] = users.get(pool_id, 1) - 1
        if users[pool_id] == 0:
            _note_call(torch, "pool_release", pool=list(pool_id))

    # Graphs already counted, by id() while alive: a graph object need not
    # take attributes.
    counted = set()

    def graph_captures(graph_obj, pool_id):
        if id(graph_obj) in counted:
            return
        users[pool_id] = users.get(pool_id, 0) + 1
        counted.add(id(graph_obj))
        key = id(graph_obj)

        def released():
            counted.discard(key)
            graph_released(pool_id)
        weakref.finalize(graph_obj, released).atexit = False
    graph = getattr(torch.cuda, "CUDAGraph", None)
    if isinstance(graph, type) and hasattr(graph, "capture_begin") and hasattr(graph, "capture_end"):
        begin, end = graph.capture_begin, graph.capture_end

        # The graph's pool id. CUDAGraph.pool() answers only after a
        # successful capture (torch 2.11 raises before), so the id is
        # worked out as PyTorch makes it: the pool given to capture_begin
        # (a graph's id, a graph_pool_handle(), a MemPool), else a new one,
        # (N, 0) with N counting such captures in this process from 1
        # (c10's MemPool::graph_pool_handle(false), which only a capture
        # without a pool calls). A successful capture checks the count.
        pool_of = {}

        def given_pool(args, kwargs):
            pool = kwargs.get("pool", args[0] if args else None)
            if pool is None:
                return None
            ids = tuple(_pool_id(pool))
            return None if ids == (0, 0) else ids

        @functools.wraps(begin)
        def capture_begin(self, *args, **kwargs):
            try:
                given = given_pool(args, kwargs)
            except Exception as e:
                _hook_error("capture_begin: the pool given", e)
                given = False
            result = begin(self, *args, **kwargs)
            if given is False:
                return result
            if given is None:
                _State.graph_pools_made += 1
                given = (_State.graph_pools_made, 0)
            pool_of[id(self)] = given
            _note_call(torch, "capture_begin", pool=list(given), stream=int(torch.cuda.current_stream().cuda_stream))
            try:
                graph_captures(self, given)
            except Exception as e:
                _hook_error("capture_begin: the graph's release", e)
            return result

        @functools.wraps(end)
        def capture_end(self, *args, **kwargs):
            pool_id = pool_of.pop(id(self), None)
            if pool_id is not None:
                _note_call(torch, "capture_end", pool=list(pool_id))
            result = end(self, *args, **kwargs)
            if pool_id is not None:
                try:
                    actual = tuple(_pool_id(self.pool()))
                    if actual != pool_id:
                        _hook_error("capture_end", RuntimeError("the graph's pool is %s, not %s as counted" % (list(actual), list(pool_id))))
                except Exception as e:
                    _hook_error("capture_end: the graph's pool", e)
            return result
        try:
            graph.capture_begin, graph.capture_end = capture_begin, capture_end
        except Exception as e:
            _hook_error("torch.cuda.CUDAGraph's capture_begin/capture_end", e)


def _apply_cap(torch, original):
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
    original(fraction, device)
    _note_fraction(torch, fraction, device, "gpumem")


# sys.monitoring's tool ids that no standard tool claims (0 debugger,
# 1 coverage, 2 profiler, 5 optimizer): the first free one is the hook's.
_MONITORING_TOOLS = (4, 3)


def _on_raise(code, offset, exception):
    """sys.monitoring's RAISE: an exception raised in, or passing through, a
    Python frame. Each OutOfMemoryError is counted once, however many frames
    it passes, by a mark on the exception itself: no reference to it is
    kept, which would keep its traceback's frames (and their tensors) alive."""
    cls = _State.oom_class
    if cls is None or not isinstance(exception, cls):
        return
    try:
        if getattr(exception, "_gpumem_counted", False):
            return
        exception._gpumem_counted = True
    except Exception:  # an exception that takes no attribute: counted at each frame, the best there is
        pass
    _State.program_ooms += 1


def _count_program_ooms(torch):
    monitoring = getattr(sys, "monitoring", None)
    cls = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if monitoring is None or cls is None:
        return
    for tool in _MONITORING_TOOLS:
        try:
            monitoring.use_tool_id(tool, "gpumem-record")
        except ValueError:  # taken by another tool
            continue
        try:
            monitoring.register_callback(tool, monitoring.events.RAISE, _on_raise)
            monitoring.set_events(tool, monitoring.get_events(tool) | monitoring.events.RAISE)
        except Exception:  # the count stays unknown; the recording goes on
            return
        _State.oom_class = cls
        _State.program_ooms = 0
        # A forked child counts its own.
        os.register_at_fork(after_in_child=lambda: setattr(_State, "program_ooms", 0))
        return


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
        try:
            _count_program_ooms(torch)
        except Exception:  # the count stays unknown (null); the recording goes on
            _State.program_ooms = None
        original = _watch_fraction(torch)
        try:
            _watch_allocator_calls(torch)
        except Exception as e:  # recorded without them; the replay then says so
            _hook_error("watching the allocator calls", e)
        try:
            _watch_process_groups(torch)
        except Exception as e:  # recorded without them: no timing note for NCCL
            _hook_error("watching init_process_group", e)
        if _ENV.get("GPUMEM_RECORD_HOLD_LATE") == "1":
            try:
                _hold_late_frees(torch)
            except Exception as e:  # recorded as the run frees them: the answer says nothing held
                _hook_error("holding what NCCL may free late", e)
        # The process's file names are claimed when it first initializes
        # CUDA, so the first to use the GPU gets FILE itself.
        torch.cuda._lazy_call(_claim_order)
        if _ENV.get("GPUMEM_RECORD_CAPACITY") or _ENV.get("GPUMEM_RECORD_FRACTION"):
            torch.cuda._lazy_call(lambda: _apply_cap(torch, original))
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
    if "torch" in sys.modules:
        # A process forked from gpumem's fork server (fork_server.py), which
        # imported torch before this run: recording starts now, still before
        # any CUDA call.
        _start(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchFinder())
    atexit.register(_finish)
if __name__ == "sitecustomize":  # the fork server ran the environment's own already
    _chain()
