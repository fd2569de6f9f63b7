"""Where a forked max-batch run's seconds go, on a GPU host.

    python3 bench/forked_run_phases.py [--batches 4,8,...] [--cap BYTES] [--json FILE]
        SCRIPT ARG... ({batch} in an ARG is each run's batch)

Imports SCRIPT's modules as gpumem's fork server does (its own _prepare:
the same imports and checks), then forks generations of runs from it, each
run with gpumem's recording hook (record_hook.py, capped as gpumem caps it)
and probes that time its phases:

  imports     the modules the run imported itself (outermost imports, summed)
  cuda_init   torch.cuda._lazy_init's first call (the CUDA context)
  conv, gemm  the first conv2d and linear, synchronized (cuDNN, cuBLAS)
  steps       first backward's start to the last one's end
  script      fork to the script's end (all of the above and the rest)
  atexit      the exit handlers (the program's, then the hook's dump)
  teardown    the last handler's end to the parent's waitpid (the
              interpreter's finalization and the process's exit)

Generations (all runs of one at once, as a max-batch step starts them):
  A  every batch, the normal exit
  B  every batch, os._exit(status) after the exit handlers
  C  as B, from a second-generation server: the server forked once more and
     warmed with the modules and shared libraries generation A's runs loaded
     themselves (each import checked as the first generation's were)
  D  one run alone (the first batch) from the warm server: no contention
Prints one line a run and a table of medians per generation; --json writes
every run's phases."""
import argparse
import atexit
import builtins
import importlib
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HOOK_DIR = os.path.join(HERE, "..", "subcommands", "reuse_sim")


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mapped_libraries():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and ".so" in parts[5]:
                libs.add(parts[5])
    return libs


class Probes:
    """Timestamps in the run (time.monotonic, shared with the parent)."""

    def __init__(self, forked_at):
        self.t = {"fork": forked_at}
        self.imports, self.import_seconds, self.depth = [], 0.0, 0
        self.backwards = []

    def mark(self, name):
        self.t.setdefault(name, time.monotonic())

    def install(self, torch):
        bootstrap = sys.modules["importlib._bootstrap"]
        find_and_load = bootstrap._find_and_load
        probes = self

        def timed_find_and_load(name, import_):
            if name in sys.modules:
                return find_and_load(name, import_)
            probes.depth += 1
            start = time.monotonic()
            try:
                return find_and_load(name, import_)
            finally:
                probes.depth -= 1
                if probes.depth == 0:
                    probes.import_seconds += time.monotonic() - start
                    probes.imports.append(name)
        bootstrap._find_and_load = timed_find_and_load

        lazy_init = getattr(torch.cuda, "_lazy_init", None) or (lambda: None)

        def timed_lazy_init():
            if "cuda_init_end" in probes.t:
                return lazy_init()
            probes.mark("cuda_init")
            try:
                return lazy_init()
            finally:
                probes.mark("cuda_init_end")
        torch.cuda._lazy_init = timed_lazy_init

        functional = getattr(getattr(torch, "nn", None), "functional", None)
        for name in ("conv2d", "linear") if functional else ():
            original = getattr(functional, name)

            def first_synchronized(*args, _original=original, _name=name, **kwargs):
                if _name + "_end" in probes.t or not torch.cuda.is_initialized():
                    return _original(*args, **kwargs)
                probes.mark(_name)
                out = _original(*args, **kwargs)
                torch.cuda.synchronize()
                probes.mark(_name + "_end")
                return out
            setattr(functional, name, first_synchronized)

        backward = getattr(getattr(torch, "autograd", None), "backward", None)
        if backward is None:  # the tests' stand-in torch
            return

        def timed_backward(*args, **kwargs):
            start = time.monotonic()
            try:
                return backward(*args, **kwargs)
            finally:
                probes.backwards.append((start, time.monotonic()))
        torch.autograd.backward = timed_backward

    def phases(self):
        t, f = self.t, self.t["fork"]
        rel = lambda a, b: round(t[b] - t[a], 3) if a in t and b in t else None
        out = {"imports": round(self.import_seconds, 3), "imported": len(self.imports),
               "cuda_init": rel("cuda_init", "cuda_init_end"), "conv": rel("conv2d", "conv2d_end"),
               "gemm": rel("linear", "linear_end"), "script": rel("fork", "script_end"),
               "atexit": rel("script_end", "atexit_end"), "to_cuda": rel("fork", "cuda_init"),
               "hook": rel("fork", "hook_end")}
        if self.backwards:
            out["steps"] = round(self.backwards[-1][1] - self.backwards[0][0], 3)
            out["first_step_to_end"] = round(t.get("script_end", f) - self.backwards[0][0], 3)
            out["backwards"] = len(self.backwards)
        return out


def run_child(script, argv, env, report, fast_exit, known_modules, known_libs, forked_at):
    """In the forked run: what fork_server.py's _become_run sets up, plus the probes."""
    os.environ.update(env)
    sys.argv = [script] + argv
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    torch = sys.modules["torch"]
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit():
        torch.set_num_threads(int(threads))
    probes = Probes(forked_at)
    probes.install(torch)
    load("_gpumem_preload", os.path.join(HOOK_DIR, "record_hook.py"))
    probes.mark("hook_end")
    import runpy
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    probes.mark("script_end")
    extra_modules = [m for m in sys.modules if m not in known_modules]
    extra_libs = sorted(mapped_libraries() - known_libs)
    threading_shutdown = getattr(threading, "_shutdown", None)
    if threading_shutdown:
        threading_shutdown()
    atexit._run_exitfuncs()
    probes.mark("atexit_end")
    doc = {"code": code, "phases": probes.phases(), "imports": probes.imports[:400],
           "extra_modules": extra_modules, "extra_libs": extra_libs, "atexit_end": probes.t["atexit_end"]}
    with open(report, "w") as f:
        json.dump(doc, f)
    sys.stdout.flush()
    sys.stderr.flush()
    if fast_exit:
        os._exit(code)
    sys.exit(code)


def generation(name, script, args, batches, cap, work, fast_exit, known_modules, known_libs, threads):
    runs = {}
    for i, batch in enumerate(batches):
        report = os.path.join(work, "%s-%d-%d.json" % (name, i, batch))
        status_dir = os.path.join(work, "%s-%d-%d.status" % (name, i, batch))
        os.makedirs(status_dir)
        env = {"GPUMEM_RECORD_FILE": os.path.join(work, "%s-%d.pickle" % (name, i)),
               "GPUMEM_RECORD_STATS_FILE": os.path.join(work, "%s-%d.stats.json" % (name, i)),
               "GPUMEM_RECORD_STATUS_DIR": status_dir, "GPUMEM_RECORD_STACKS": "0",
               "GPUMEM_RECORD_CAPACITY": str(cap), "OMP_NUM_THREADS": str(threads)}
        argv = [a.replace("{batch}", str(batch)) for a in args]
        log = os.open(os.path.join(work, "%s-%d-%d.log" % (name, i, batch)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        forked_at = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(log, 1)
                os.dup2(log, 2)
                run_child(script, argv, env, report, fast_exit, known_modules, known_libs, forked_at)
            except SystemExit:  # the normal exit: the interpreter's own finalization, timed
                raise
            except BaseException:
                os._exit(70)
        os.close(log)
        runs[pid] = {"generation": name, "batch": batch, "report": report, "forked_at": forked_at}
    done = []
    while runs:
        pid, status = os.wait()
        reaped = time.monotonic()
        run = runs.pop(pid, None)
        if run is None:
            continue
        run["wall"] = round(reaped - run["forked_at"], 3)
        run["exit"] = os.waitstatus_to_exitcode(status)
        try:
            with open(run["report"]) as f:
                doc = json.load(f)
            run.update(doc)
            run["phases"]["teardown"] = round(reaped - doc["atexit_end"], 3)
        except (OSError, ValueError) as e:
            run["phases"] = {"error": str(e)}
        done.append(run)
    done.sort(key=lambda r: r["batch"])
    for r in done:
        print("%s bs %5d exit %3s wall %6.2f %s" % (name, r["batch"], r["exit"], r["wall"],
              " ".join("%s=%s" % kv for kv in r["phases"].items())), flush=True)
    return done


def warm(fork_server, extra_modules, extra_libs, script):
    """The second-generation server's warming: each module and library
    generation A's runs loaded, checked as the first generation's imports."""
    import ctypes
    start = time.monotonic()
    directory = os.path.dirname(os.path.abspath(script))
    wanted = lambda m: not (m in sys.modules or m.startswith("_gpumem") or m == "__main__" or fork_server._is_local(m, directory))
    loads = [("libs", lib, lambda lib=lib: ctypes.CDLL(lib, mode=os.RTLD_LAZY)) for lib in extra_libs]
    loads += [("modules", m, lambda m=m: importlib.import_module(m)) for m in extra_modules if wanted(m)]
    done = {"libs": 0, "modules": 0, "failed": 0}
    for kind, name, load_it in loads:
        try:
            load_it()
            done[kind] += 1
        except BaseException:
            done["failed"] += 1
        why = fork_server._unfit_after(name)
        if why:
            return None, why
    return dict(done, seconds=round(time.monotonic() - start, 3)), None


def medians(runs):
    keys = ["wall", "imports", "imported", "to_cuda", "cuda_init", "conv", "gemm", "steps", "first_step_to_end", "script", "atexit", "teardown"]
    row = {}
    for k in keys:
        values = [r["wall"] if k == "wall" else r["phases"].get(k) for r in runs]
        values = [v for v in values if isinstance(v, (int, float))]
        row[k] = round(statistics.median(values), 3) if values else None
    row["max_wall"] = max(r["wall"] for r in runs)
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batches", default="4,8,16,32,64,128,256,512")
    p.add_argument("--cap", type=int, default=6 << 30, help="bytes (6 GiB)")
    p.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of each run")
    p.add_argument("--json")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    batches = [int(b) for b in a.batches.split(",")]
    script = os.path.abspath(a.script)
    fork_server = load("gpumem_fork_server", os.path.join(HOOK_DIR, "fork_server.py"))
    work = tempfile.mkdtemp(prefix="forked-run-phases.")
    start = time.monotonic()
    why = fork_server._prepare(work, script)
    print("server: imported in %.2f s%s" % (time.monotonic() - start, "; unfit: " + why if why else ""), flush=True)
    if why:
        sys.exit(1)
    sys.argv = [sys.argv[0]]
    known_modules, known_libs = set(sys.modules), mapped_libraries()
    results = {"server_import": round(time.monotonic() - start, 3), "generations": {}}
    gen = lambda name, bs, fast: generation(name, script, a.args, bs, a.cap, work, fast, known_modules, known_libs, a.threads)
    results["generations"]["A"] = gen("A", batches, False)
    results["generations"]["B"] = gen("B", batches, True)
    extra_modules, extra_libs = [], set()
    for r in results["generations"]["A"]:
        for m in r.get("extra_modules", []):
            if m not in extra_modules:
                extra_modules.append(m)
        extra_libs.update(r.get("extra_libs", []))
    reader, writer = os.pipe()
    second = os.fork()
    if second == 0:  # the second-generation server: warms, then forks C and D
        os.close(reader)
        warmed, why = warm(fork_server, extra_modules, sorted(extra_libs), script)
        doc = {"warm": warmed, "unfit": why}
        if warmed:
            known_modules, known_libs = set(sys.modules), mapped_libraries()
            gen = lambda name, bs, fast: generation(name, script, a.args, bs, a.cap, work, fast, known_modules, known_libs, a.threads)
            doc["C"] = gen("C", batches, True)
            doc["D"] = gen("D", batches[:1], True)
        os.write(writer, json.dumps(doc).encode())
        os.close(writer)
        os._exit(0)
    os.close(writer)
    data = b""
    while True:
        chunk = os.read(reader, 1 << 20)
        if not chunk:
            break
        data += chunk
    os.waitpid(second, 0)
    doc = json.loads(data or b"{}")
    print("warm server: %s" % (doc.get("warm") or "unfit: %s" % doc.get("unfit")), flush=True)
    results["warm"] = doc.get("warm")
    results["warm_unfit"] = doc.get("unfit")
    for name in ("C", "D"):
        if name in doc:
            results["generations"][name] = doc[name]
    print("\nmedians (s) per generation; max_wall: its slowest run")
    cols = ["wall", "max_wall", "imports", "imported", "to_cuda", "cuda_init", "conv", "gemm", "steps", "first_step_to_end", "script", "atexit", "teardown"]
    print("gen " + " ".join("%9s" % c[:9] for c in cols))
    for name, runs in results["generations"].items():
        row = medians(runs)
        results.setdefault("medians", {})[name] = row
        print("%-3s " % name + " ".join("%9s" % ("-" if row.get(c) is None else row[c]) for c in cols))
    print("extra libraries loaded by runs: %d; extra modules: %d" % (len(extra_libs), len(extra_modules)))
    print("\n".join("  " + lib for lib in sorted(extra_libs)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
