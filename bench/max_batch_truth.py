#!/usr/bin/env python3
"""The independent truth of issue 47: for each (program, cap), the largest
batch that runs under PyTorch's own cap (bench/cap_run.py, the same bytes as
gpumem's --record --capacity), found by real runs -- doubling from
--start-bs until a run runs out of memory, then bisection to one batch --
with no gpumem involved. Many searches run at once across the GPUs: each
run is a fresh process on whichever GPU has room for its cap (the caps
keep them apart), so a GPU holds several. Then, where time is left, the
batches just below each answer are run too (--below K: truth-1 .. truth-K),
to see memory that is not monotone in the batch. With --lightning, also
Lightning's own batch-size finder (Tuner.scale_batch_size, binsearch) on
batch_programs_w/lightning_vit.py under each cap, the whole process timed.

    max_batch_truth.py --work DIR [--programs "a b"] [--caps "6GiB 14GiB"] [--gpus "0 1 2 3"]
                       [--deadline S] [--hard-limit S] [--below K] [--lightning] ...

Standard library only. A run's verdict is cap_run.py's exit status: 0 fits,
3 out of memory (an OutOfMemoryError, or num_ooms > 0), else failed (a
failure is not an OOM: the search stops there and says so); a run past
--run-timeout is a timeout. No run starts after --deadline seconds; at
--hard-limit every run still going is killed (its process group), so the
results are whole before anything can hang.

DIR gets runs.jsonl (one line a run, as it ends), cases.jsonl (one line a
search, with its trials, its answer, the probes below it), lightning.jsonl
(one line a Lightning search), truth.md (the table), and logs/ (the last
4 KiB of each run's output)."""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GiB = 1 << 30
UNITS = {"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
         "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12}


def parse_size(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?\s*", text)
    if not m:
        raise ValueError("not a size: %r (e.g. 6GiB)" % text)
    return int(float(m.group(1)) * UNITS[m.group(2) or ""])


class Gpus:
    """Room on each GPU, in bytes: a run takes its cap plus what it holds
    outside the allocator (its CUDA context, cuBLAS's and cuDNN's handles)
    until it ends. Searches' runs go before the probes' (priority 0 < 1)."""

    def __init__(self, gpus, budgets):
        self.free = dict(zip(gpus, budgets))
        self.running = {g: 0 for g in gpus}
        self.cv = threading.Condition()
        self.waiting = [0, 0]

    def take(self, need, priority, stop):
        with self.cv:
            self.waiting[priority] += 1
            try:
                while True:
                    if stop():
                        return None
                    if priority == 0 or self.waiting[0] == 0:
                        fits = [g for g, f in self.free.items() if f >= need]
                        if fits:
                            g = max(fits, key=lambda g: (self.free[g], -self.running[g]))
                            self.free[g] -= need
                            self.running[g] += 1
                            return g
                    self.cv.wait(1.0)
            finally:
                self.waiting[priority] -= 1

    def give(self, gpu, need):
        with self.cv:
            self.free[gpu] += need
            self.running[gpu] -= 1
            self.cv.notify_all()

    def load(self, gpu):
        with self.cv:
            return self.running[gpu]


class Driver:
    def __init__(self, args):
        self.a = args
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.procs = set()
        self.killed = False
        os.makedirs(os.path.join(args.work, "logs"), exist_ok=True)
        self.runs_file = open(os.path.join(args.work, "runs.jsonl"), "a")
        self.cases_file = open(os.path.join(args.work, "cases.jsonl"), "a")
        self.lightning_file = open(os.path.join(args.work, "lightning.jsonl"), "a")
        gpus = args.gpus.split()
        totals = gpu_totals(gpus, args.gpu_memory)
        reserve = {}
        for item in (args.reserve or "").split():
            g, amount = item.split(":")
            reserve[g] = parse_size(amount)
        budgets = [totals[g] - parse_size(args.headroom) - reserve.get(g, 0) for g in gpus]
        self.gpus = Gpus(gpus, budgets)
        self.say("GPUs %s, room for runs (bytes): %s" % (" ".join(gpus), dict(zip(gpus, budgets))))

    def elapsed(self):
        return time.time() - self.t0

    def late(self):
        return self.killed or self.elapsed() >= self.a.deadline

    def say(self, msg):
        line = "[%5.1f s] %s" % (self.elapsed(), msg)
        print(line, file=sys.stderr, flush=True)
        with self.lock:
            with open(os.path.join(self.a.work, "progress.log"), "a") as f:
                f.write(line + "\n")

    def write(self, f, doc):
        with self.lock:
            f.write(json.dumps(doc) + "\n")
            f.flush()

    def run(self, case, cap, batch, why, cmd, priority=0, allow_ooms=False, tag=None, timeout=None):
        """One real run under the cap: its record (verdict fits / oom / failed / timeout / not-run)."""
        need = cap + parse_size(self.a.outside)
        gpu = self.gpus.take(need, priority, self.late)
        if gpu is None:
            return {"case": case, "batch": batch, "why": why, "verdict": "not-run", "note": "deadline"}
        name = "%s.%s" % (case, tag or "bs%d" % batch)
        stats = os.path.join(self.a.work, "logs", name + ".stats.json")
        log = os.path.join(self.a.work, "logs", name + ".log")
        full = [sys.executable, os.path.join(HERE, "cap_run.py"), "--cap", str(cap), "--stats", stats] + (
            ["--allow-ooms"] if allow_ooms else []) + ["--"] + cmd
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpu)
        for k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
            env.pop(k, None)
        load = self.gpus.load(gpu)
        start = time.time()
        rc, out = None, b""
        try:
            with self.lock:
                if self.killed:
                    raise RuntimeError("hard limit")
                p = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)
                self.procs.add(p)
            try:
                out, _ = p.communicate(timeout=timeout or self.a.run_timeout)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                kill_group(p)
                out, _ = p.communicate()
                rc = "timeout"
            with self.lock:
                self.procs.discard(p)
        except RuntimeError:
            rc = "killed"
        finally:
            self.gpus.give(gpu, need)
        wall = time.time() - start
        with open(log, "wb") as f:
            f.write(out[-4096:])
        st = load_json(stats) or {}
        if rc == "timeout" or (self.killed and rc not in (0, 3)):
            verdict = "timeout" if rc == "timeout" else "killed"
        elif rc == 0:
            verdict = "fits"
        elif rc == 3:
            verdict = "oom"
        else:
            verdict = "failed"
        rec = {"case": case, "batch": batch, "why": why, "verdict": verdict, "exit": rc, "wall": round(wall, 3),
               "gpu": gpu, "gpu_load_at_start": load, "start": round(start - self.t0, 2), "num_ooms": st.get("num_ooms"),
               "retries": st.get("retries"), "peak_reserved": st.get("peak_reserved"), "peak_allocated": st.get("peak_allocated"),
               "allowed_memory_maximum": st.get("allowed_memory_maximum"), "raised": st.get("raised"),
               "program_wall": st.get("wall")}
        if verdict == "failed":
            rec["tail"] = out[-600:].decode(errors="replace")
        found = re.findall(rb"lightning_found_batch=(\d+)", out)
        if found:
            rec["lightning_found_batch"] = int(found[-1])
        trials = re.findall(rb"lightning_trials=(\d+)", out)
        if trials:
            rec["lightning_trials"] = int(trials[-1])
        self.write(self.runs_file, rec)
        return rec

    def search(self, prog, cap_text):
        cap = parse_size(cap_text)
        case = "%s@%s" % (prog, cap_text)
        path = os.path.join(self.a.programs_dir, prog + ".py")
        cmd = lambda b: [path, "--bs", str(b), "--steps", str(self.a.steps)]
        trials, lo, hi, note = [], 0, None, None
        b = self.a.start_bs
        while b:
            if self.late():
                note = "deadline before the run at %d" % b
                break
            r = self.run(case, cap, b, "double" if hi is None else "bisect", cmd(b))
            if r["verdict"] == "not-run":
                note = "deadline before the run at %d" % b
                break
            trials.append(r)
            self.say("%s: batch %d %s in %.1f s" % (case, b, r["verdict"], r.get("wall", 0)))
            if r["verdict"] == "fits":
                lo = b
            elif r["verdict"] == "oom":
                hi = b
            else:
                note = "the run at %d: %s" % (b, r["verdict"])
                break
            if hi is None:
                if b >= self.a.limit_bs:
                    note = "fits at the search's limit %d" % b
                    break
                b = min(b * 2, self.a.limit_bs)
            else:
                if hi - lo <= 1:
                    break
                b = (lo + hi) // 2
        done = note is None and hi is not None and hi - lo <= 1
        doc = {"case": case, "program": prog, "cap": cap_text, "cap_bytes": cap, "truth": lo if done else None,
               "largest_ran": lo, "smallest_oom": hi, "complete": done, "note": note, "runs": len(trials),
               "wall": round(sum(t.get("wall", 0) for t in trials if t["verdict"] != "not-run"), 2), "trials": trials}
        # The batches just below the answer: memory that is not monotone in the batch.
        below = []
        if done and self.a.below > 0:
            for k in range(1, self.a.below + 1):
                if lo - k < 1 or self.late():
                    break
                r = self.run(case, cap, lo - k, "below", cmd(lo - k), priority=1)
                if r["verdict"] == "not-run":
                    break
                below.append(r)
            bad = [r["batch"] for r in below if r["verdict"] != "fits"]
            if bad:
                self.say("%s: NOT MONOTONE below %d: %s did not fit" % (case, lo, bad))
        doc["below"] = below
        doc["below_not_fitting"] = [r["batch"] for r in below if r["verdict"] != "fits"]
        self.write(self.cases_file, doc)
        self.say("%s: truth %s after %d runs, %.1f s%s" % (case, doc["truth"], doc["runs"], doc["wall"], " (" + note + ")" if note else ""))

    def lightning(self, cap_text):
        cap = parse_size(cap_text)
        case = "lightning_find@%s" % cap_text
        if self.late():
            self.write(self.lightning_file, {"case": case, "cap": cap_text, "note": "deadline: not run"})
            return
        path = os.path.join(self.a.programs_dir, "lightning_vit.py")
        cmd = [path, "--find", "--mode", "binsearch", "--steps-per-trial", str(self.a.steps), "--init-bs", str(self.a.lightning_init)]
        r = self.run(case, cap, 0, "lightning", cmd, allow_ooms=True, tag="find", timeout=self.a.lightning_timeout)
        doc = {"case": case, "program": "lightning_vit", "cap": cap_text, "cap_bytes": cap, "found": r.get("lightning_found_batch"), "trials": r.get("lightning_trials"),
               "wall": r.get("wall"), "verdict": r["verdict"], "exit": r.get("exit"), "num_ooms": r.get("num_ooms"),
               "mode": "binsearch", "steps_per_trial": self.a.steps, "init_bs": self.a.lightning_init}
        self.write(self.lightning_file, doc)
        self.say("%s: Lightning found %s in %s s (%s)" % (case, doc["found"], doc["wall"], r["verdict"]))

    def kill_all(self):
        with self.lock:
            self.killed = True
            procs = list(self.procs)
        for p in procs:
            kill_group(p, grace=3)


def kill_group(p, grace=5):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            p.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def gpu_totals(gpus, override):
    if override:
        return {g: parse_size(override) for g in gpus}
    totals = {}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout
        for line in out.splitlines():
            idx, mib = [x.strip() for x in line.split(",")]
            totals[idx] = int(mib) << 20
    except (OSError, ValueError, subprocess.TimeoutExpired):
        pass
    return {g: totals.get(g, 80 * GiB) for g in gpus}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True)
    p.add_argument("--programs-dir", default=os.path.join(HERE, "batch_programs_w"))
    p.add_argument("--programs", default="")
    p.add_argument("--caps", default="6GiB 14GiB")
    p.add_argument("--gpus", default="")
    p.add_argument("--gpu-memory", default="", help="each GPU's memory (default: nvidia-smi's)")
    p.add_argument("--headroom", default="3GiB", help="kept free on each GPU")
    p.add_argument("--reserve", default="", help="'GPU:SIZE ...' kept for other work on a GPU")
    p.add_argument("--outside", default="1536MiB", help="what a run holds beyond its cap (context, handles)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--start-bs", type=int, default=8)
    p.add_argument("--limit-bs", type=int, default=8192)
    p.add_argument("--below", type=int, default=8)
    p.add_argument("--lightning", action="store_true")
    p.add_argument("--lightning-init", type=int, default=2)
    p.add_argument("--run-timeout", type=float, default=90)
    p.add_argument("--lightning-timeout", type=float, default=240, help="Lightning's whole search, one process")
    p.add_argument("--deadline", type=float, default=380)
    p.add_argument("--hard-limit", type=float, default=440)
    a = p.parse_args()
    if not a.gpus:
        cvd = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        a.gpus = cvd.replace(",", " ") if cvd else " ".join(sorted(gpu_totals([], "") or {}) or ["0"])
        if not a.gpus.strip():
            a.gpus = "0"
    if not a.programs:
        a.programs = " ".join(sorted(f[:-3] for f in os.listdir(a.programs_dir) if f.endswith(".py")))
    try:
        caps = a.caps.split()
        [parse_size(c) for c in caps]
        for item in a.reserve.split():
            parse_size(item.split(":")[1])
    except (ValueError, IndexError) as e:
        sys.exit("max_batch_truth.py: %s" % e)
    missing = [n for n in a.programs.split() if not os.path.isfile(os.path.join(a.programs_dir, n + ".py"))]
    if missing:
        sys.exit("max_batch_truth.py: no program %s in %s" % (", ".join(missing), a.programs_dir))
    d = Driver(a)
    room = max(d.gpus.free.values())
    too_big = [c for c in caps if parse_size(c) + parse_size(a.outside) > room]
    if too_big:
        sys.exit("max_batch_truth.py: no GPU has room for a run under %s (%d bytes a GPU left for runs)" % (" ".join(too_big), room))
    with open(os.path.join(a.work, "settings.json"), "w") as f:
        json.dump(vars(a), f, indent=1)
    threads = []
    # The Lightning searches first: each is one long process.
    if a.lightning:
        threads += [threading.Thread(target=d.lightning, args=(c,), daemon=True) for c in caps]
    # Largest caps first: their searches take the most runs.
    for c in sorted(caps, key=parse_size, reverse=True):
        threads += [threading.Thread(target=d.search, args=(prog, c), daemon=True) for prog in a.programs.split()]
    for t in threads:
        t.start()
    signal.signal(signal.SIGTERM, lambda *_: d.kill_all())
    try:
        while any(t.is_alive() for t in threads):
            if d.elapsed() >= a.hard_limit:
                d.say("hard limit (%s s): killing the runs still going" % a.hard_limit)
                d.kill_all()
                break
            time.sleep(1)
    except KeyboardInterrupt:
        d.kill_all()
    for t in threads:
        t.join(timeout=10)
    d.say("done: %d searches%s" % (len(threads), ", some cut short" if any(t.is_alive() for t in threads) else ""))
    for f in (d.runs_file, d.cases_file, d.lightning_file):
        f.flush()
    subprocess.run([sys.executable, os.path.join(HERE, "max_batch_table.py"), "truth", a.work],
                   stdout=open(os.path.join(a.work, "truth.md"), "w"))
    os._exit(0)


if __name__ == "__main__":
    main()
