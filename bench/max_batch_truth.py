#!/usr/bin/env python3
"""Issue 47's and issue 54's benchmark of "the largest batch that fits", on
the GPUs of one host. Several kinds of work, all at once, each process on
whichever GPU has room for its cap (the caps keep them apart, so a GPU
holds several) while the host has a core for it (--max-procs):

  * the truth: for each (program, cap), the largest batch that runs under
    PyTorch's own cap (bench/cap_run.py: the same bytes as gpumem's
    --record --capacity), found by real runs with no gpumem involved --
    doubling from --start-bs until a run runs out of memory, then bisection
    to one batch, --search-width runs at once (1: one after another) --
    and then, where time is left, the --below K batches just below it
    (memory that is not monotone in the batch);
  * with --lightning, Lightning's own batch-size finder
    (Tuner.scale_batch_size, binsearch) on batch_programs_w/lightning_vit.py
    under each cap, the whole process timed;
  * with --gpumem BIN, gpumem's answer for each (program, cap):
    `BIN reuse-sim max-batch --capacity CAP GPUMEM_ARGS --json -- python3
    prog.py --bs {batch} --steps S`, timed, its JSON document kept; room is
    kept for --gpumem-slots of its runs at once (its --jobs; a case's own
    options by --gpumem-case-args), the searches started longest first
    (torchrun's), then the caps in turn, smallest first, and together held
    to --gpumem-share of the room and the processes, so that the checks
    and the truth always have the rest; none starts after --gpumem-deadline;
  * with --verify N (and --verify-next K), issue 54's check of an answer:
    as soon as gpumem (or Lightning) answers a case, the answer run N more
    times under PyTorch's own cap and the next batch K times, all at once
    where there is room, before anything else waiting for room (a gpumem
    search's start, a truth search's run), until --verify-deadline
    (--verify-after-all: only once every answer is in, so that no check
    shares the GPU with a timed search).

--programs takes names in --programs-dir or paths of programs elsewhere
(bench/batch_programs/grad_accum.py). Programs under torchrun (--torchrun
"prog@CAP[:NPROC] ...", from --torchrun-dir, NPROC ranks, --nproc by
default, one GPU a rank; with --share-gpu all ranks of a case on one GPU,
which needs their room together) are searched alike: every rank under the
cap, an OOM on any rank an OOM; gpumem gets `torchrun --standalone
--nproc-per-node N prog.py --bs {batch} --steps S`.

    max_batch_truth.py --work DIR [--programs "a b"] [--caps "6GiB 14GiB"] [--gpus "0 1 2 3"]
                       [--cases "unet@14GiB ..."] [--torchrun "ddp_uneven@4GiB fsdp_uneven@6GiB:1"] [--share-gpu]
                       [--knob-cases FILE [--knob-select "PATTERN ..."]]
                       [--lightning] [--gpumem BIN [--gpumem-args ARGS] [--gpumem-slots K] [--gpumem-busy F]
                       [--gpumem-share F] [--gpumem-case-args CASE=ARGS] [--gpumem-deadline S]]
                       [--verify N] [--verify-next K] [--verify-deadline S]
                       [--truth-from DIR0 ...] [--no-truth] [--deadline S] [--hard-limit S] [--below K] [--dry-run] ...

Issue 55: a case may search any knob, not only the batch. --knob-cases
FILE (a JSON list; see the end of --help) gives each its program's words
with the knob in braces (--seq {seq} --bs 2), its caps and its step
(multiple_of): the truth doubles from the case's start and bisects on
multiples of the step down to one step, the check runs the answer and the
answer plus one step, gpumem gets the same words with --multiple-of N
where N > 1, and the records (runs.jsonl, cases.jsonl, gpumem.jsonl,
verify.jsonl: knob, multiple_of) and the tables name the knob; the value
stays under the key "batch", as gpumem's JSON keeps it.

--truth-from DIR0 (repeatable) takes the complete searches of an earlier
DIR (its cases.jsonl) instead of searching again. Standard library only. A
run's verdict is cap_run.py's exit status: 0 fits, 3 out of memory (an
OutOfMemoryError, or num_ooms > 0), else failed (a failure is not an OOM:
the search stops there and says so); past its timeout, timeout. No run
starts after --deadline seconds; at --hard-limit every run still going is
killed (its process group), so the results are whole before anything can
hang. --dry-run tries all of it with no GPU and no torch: the runs are
bench/dryrun_cap_run.py's made-up verdicts (and its stand-in torchrun),
and --gpumem should be bench/dryrun_gpumem.py.

DIR gets runs.jsonl (one line a real run, as it ends, with why it ran:
double, bisect, below, lightning, verify, verify-next, verify-lightning,
verify-next-lightning), cases.jsonl (one line a search: its trials, its
answer, the probes below it), lightning.jsonl (one line a Lightning
search), gpumem.jsonl (one line a gpumem answer; its documents in gpumem/),
verify.jsonl (one line a checked answer: the batch, the runs planned and
their verdicts), truth.md (the truth's table; with --gpumem, max-batch.md
too: gpumem against the truth, and with --verify verify.md: the checks, by
max_batch_table.py), and logs/ (the last 4 KiB of each run's output)."""
import argparse
import glob
import json
import os
import re
import shutil
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


class Case:
    """A program under a cap: plain python (nproc 0), or torchrun's nproc
    ranks, each on a GPU of its own or (shared) all on one GPU. Its knob is
    the size searched: the batch (--bs N, as always), or, for a case of
    --knob-cases, any {NAME} in its argument template (args), searched in
    multiples of step from start (doubling) up to limit."""

    def __init__(self, program, path, cap_text, nproc=0, shared=False, knob="batch", args=None, step=1, start=None, limit=None):
        self.program, self.path, self.cap_text, self.nproc = program, path, cap_text, nproc
        self.shared = shared and nproc > 1
        self.cap = parse_size(cap_text)
        self.knob, self.args, self.step, self.start, self.limit = knob, args, step, start, limit
        # Two ranks on two GPUs keep issue 47's names, which --truth-from reads;
        # any other layout is another case (its truth is its own).
        layout = "" if nproc in (0, 2) and not self.shared else ":%d%s" % (nproc, "-1gpu" if self.shared else "")
        self.name = "%s@%s%s" % (program, cap_text, layout)

    def program_argv(self, batch, steps):
        """The program's words at a value of its knob (batch: --bs N; a
        template: its {NAME} filled in, and --steps S unless it sets them)."""
        if self.args is None:
            return [self.path, "--bs", str(batch), "--steps", str(steps)]
        words = [w.replace("{%s}" % self.knob, str(batch)) for w in self.args]
        return [self.path] + words + ([] if "--steps" in self.args else ["--steps", str(steps)])

    def placeholder(self):
        return "{%s}" % self.knob

    def value_tag(self, value):
        """A run's name for its value: bs8 for a batch, seq1024 for {seq}."""
        return ("bs%d" if self.knob == "batch" else self.knob + "%d") % value

    def knob_doc(self):
        return {"knob": self.knob, "multiple_of": self.step}


KNOB_CASES_HELP = """--knob-cases FILE (or the JSON text itself): a list of cases whose
knob is not the batch, each {"name": "gpt_len_eager", "program":
"gpt_len.py" (beside FILE, or a path), "args": "--seq {seq} --bs 2 --attn
eager" (the program's words, its knob once in braces; --steps S is added
unless given), "caps": ["6GiB", "14GiB"], "multiple_of": 64 (the truth's
doubling and bisection land on multiples only, the check's next value is
the answer plus it, and gpumem gets --multiple-of N where N > 1; default
1), "start": 128 (the doubling's first value, a multiple; default
--start-bs), "limit": 8192 (the largest value ever run; default
--limit-bs), "gpumem_args": "--record-batches 128,256" (the case's own
gpumem options, as --gpumem-case-args)}; one case a cap, named
NAME@CAP. --knob-select 'PATTERN ...' keeps those whose NAME@CAP matches
one of the shell patterns (*@6GiB)."""


def knob_cases(spec, select, folder_default):
    """The cases of --knob-cases (a file or JSON text) that --knob-select
    keeps, and their gpumem options as --gpumem-case-args items."""
    import fnmatch
    if spec.lstrip().startswith("["):
        items, folder = json.loads(spec), folder_default
    else:
        with open(spec) as f:
            items = json.load(f)
        folder = os.path.dirname(os.path.abspath(spec))
    cases, extra = [], []
    patterns = select.split() or ["*"]
    for item in items:
        name, args = item["name"], item["args"].split()
        knobs = sorted(set(re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", item["args"])))
        if len(knobs) != 1:
            raise ValueError("knob case %s: its args name %s knobs in braces; one is searched" % (name, len(knobs) or "no"))
        step = int(item.get("multiple_of", 1))
        if step < 1:
            raise ValueError("knob case %s: multiple_of %d" % (name, step))
        start = item.get("start")
        start = None if start is None else -(-int(start) // step) * step
        limit = item.get("limit")
        limit = None if limit is None else int(limit) // step * step
        program = item["program"]
        path = program if os.path.isabs(program) else os.path.join(folder, program)
        for cap in item["caps"]:
            case = Case(name, path, cap, knob=knobs[0], args=args, step=step, start=start, limit=limit)
            if not any(fnmatch.fnmatchcase(case.name, pat) for pat in patterns):
                continue
            cases.append(case)
            if item.get("gpumem_args"):
                extra.append("%s=%s" % (case.name, item["gpumem_args"]))
    return cases, extra


def program_path(item, folder):
    """(name, path) of a program given by its name in folder or by a path."""
    if "/" in item or item.endswith(".py"):
        return os.path.basename(item)[:-3] if item.endswith(".py") else os.path.basename(item), os.path.abspath(item)
    return item, os.path.join(folder, item + ".py")


def torchrun_argv(nproc, dry_run=False):
    if dry_run:  # the stand-in launcher: the ranks as processes, torchrun's environment
        return [sys.executable, os.path.join(HERE, "dryrun_cap_run.py"), "--torchrun", str(nproc)]
    launcher = shutil.which("torchrun")
    head = [launcher] if launcher else [sys.executable, "-m", "torch.distributed.run"]
    return head + ["--standalone", "--nproc-per-node", str(nproc)]


# Who goes first for room (a lower number first): an answer's check, so that
# every answer that exists gets checked; then a gpumem search's start (the long
# single processes, kept to --gpumem-share of the room, so that checks and truth
# searches always have the rest); then the truth searches' runs; then the probes
# below a truth.
VERIFY, GPUMEM, TRUTH, BELOW = 0, 1, 2, 3


class Gpus:
    """Room on each GPU, in bytes, and the host's cores: a run takes its
    cap plus what it holds outside the allocator (its CUDA context,
    cuBLAS's and cuDNN's handles, NCCL's buffers) until it ends, on one GPU
    or on each of several (a torchrun job), and a core a process. A lower
    priority number goes first (VERIFY, GPUMEM, TRUTH, BELOW);
    among equals, one that has waited --patience seconds goes before any
    that came after it, so that a large request is not starved by small
    ones."""

    def __init__(self, gpus, budgets, max_procs, patience):
        self.free = dict(zip(gpus, budgets))
        self.running = {g: 0 for g in gpus}
        self.procs, self.max_procs, self.patience = 0, max_procs, patience
        self.cv = threading.Condition()
        self.waiters = {}  # ticket: (priority, since)
        self.tickets = 0

    def blocked(self, me):
        priority, since = self.waiters[me]
        now = time.time()
        for ticket, (p, t) in self.waiters.items():
            if ticket == me:
                continue
            if p < priority or (p == priority and t < since and now - t >= self.patience):
                return True
        return False

    def take(self, need, priority, stop, count=1, procs=1):
        with self.cv:
            self.tickets += 1
            me = self.tickets
            self.waiters[me] = (priority, time.time())
            try:
                while True:
                    if stop():
                        return None
                    if not self.blocked(me) and self.procs + procs <= max(self.max_procs, procs):
                        fits = sorted((g for g, f in self.free.items() if f >= need),
                                      key=lambda g: (-self.free[g], self.running[g]))
                        if len(fits) >= count:
                            chosen = sorted(fits[:count], key=lambda g: list(self.free).index(g))
                            for g in chosen:
                                self.free[g] -= need
                                self.running[g] += 1
                            self.procs += procs
                            return chosen
                    self.cv.wait(1.0)
            finally:
                del self.waiters[me]
                self.cv.notify_all()

    def give(self, gpus, need, procs=1):
        with self.cv:
            for g in gpus:
                self.free[g] += need
                self.running[g] -= 1
            self.procs -= procs
            self.cv.notify_all()

    def load(self, gpus):
        with self.cv:
            return max(self.running[g] for g in gpus)


class Driver:
    def __init__(self, args):
        self.a = args
        self.t0 = time.time()
        self.lock = threading.Lock()
        self.procs = set()
        self.killed = False
        self.cap_run = os.path.join(HERE, "dryrun_cap_run.py" if args.dry_run else "cap_run.py")
        # --verify-after-all: the checks wait for every gpumem and Lightning process to end.
        self.answers_pending = 0
        self.all_answered = threading.Event()
        # gpumem searches start in this order, together inside --gpumem-share.
        self.share_cv = threading.Condition()
        self.gpumem_queue = []
        self.gpumem_held = [0, 0]  # bytes, processes
        for sub in ("logs", "gpumem"):
            os.makedirs(os.path.join(args.work, sub), exist_ok=True)
        self.files = {k: open(os.path.join(args.work, k + ".jsonl"), "a") for k in ("runs", "cases", "lightning", "gpumem", "verify")}
        gpus = args.gpus.split()
        totals = gpu_totals(gpus, args.gpu_memory)
        reserve = {}
        for item in (args.reserve or "").split():
            g, amount = item.split(":")
            reserve[g] = parse_size(amount)
        budgets = [totals[g] - parse_size(args.headroom) - reserve.get(g, 0) for g in gpus]
        self.gpus = Gpus(gpus, budgets, args.max_procs, args.patience)
        self.room = max(budgets)
        self.say("GPUs %s, room for runs (bytes): %s; at most %d processes at once" % (
            " ".join(gpus), dict(zip(gpus, budgets)), args.max_procs))

    def elapsed(self):
        return time.time() - self.t0

    def late(self):
        return self.killed or self.elapsed() >= self.a.deadline

    def verify_late(self):
        return self.killed or self.elapsed() >= self.a.verify_deadline

    def gpumem_late(self):
        return self.killed or self.elapsed() >= self.a.gpumem_deadline

    def say(self, msg):
        line = "[%5.1f s] %s" % (self.elapsed(), msg)
        print(line, file=sys.stderr, flush=True)
        with self.lock:
            with open(os.path.join(self.a.work, "progress.log"), "a") as f:
                f.write(line + "\n")

    def write(self, kind, doc):
        with self.lock:
            self.files[kind].write(json.dumps(doc) + "\n")
            self.files[kind].flush()

    def placement(self, case):
        """What one run of the case takes: (bytes on each of its GPUs, how
        many GPUs, how many processes)."""
        rank = case.cap + parse_size(self.a.outside) + (parse_size(self.a.nccl) if case.nproc else 0)
        if case.shared:
            return rank * case.nproc, 1, case.nproc
        return rank, max(1, case.nproc), max(1, case.nproc)

    def gpumem_args_for(self, case):
        """--gpumem-args with the case's own --gpumem-case-args over them
        (an option given in both takes the case's value)."""
        words = self.a.gpumem_args.split()
        if case.step > 1 and "--multiple-of" not in words:
            words += ["--multiple-of", str(case.step)]
        for item in self.a.gpumem_case_args:
            name, _, extra = item.partition("=")
            if name != case.name:
                continue
            extra = extra.split()
            i = 0
            while i < len(extra):
                option = extra[i]
                value = extra[i + 1:i + 2] if i + 1 < len(extra) and not extra[i + 1].startswith("--") else []
                if option in words and value:
                    at = words.index(option)
                    words[at + 1:at + 2] = value
                elif option not in words:
                    words += [option] + value
                i += 1 + len(value)
        return words

    def gpumem_placement(self, case):
        """What a gpumem process takes: room for its runs at once (its
        --jobs, at most --gpumem-slots, as many as fit) at the cap each, its
        own CUDA context, and a core for --gpumem-busy of those runs (it
        seldom runs all of them at once: 2.5 of 4 on average on the H200);
        (bytes, GPUs, processes, slots)."""
        need, count, procs = self.placement(case)
        own = parse_size(self.a.gpumem_own)
        words = self.gpumem_args_for(case)
        jobs = words[words.index("--jobs") + 1] if "--jobs" in words[:-1] else ""
        slots = min(self.a.gpumem_slots, int(jobs)) if jobs.isdigit() and int(jobs) > 0 else self.a.gpumem_slots
        slots = max(1, min(slots, (self.room - own) // need, self.a.max_procs // procs))
        busy = max(1, -(-int(slots * self.a.gpumem_busy * 100) // 100))
        return need * slots + own, count, procs * busy, slots

    def gpumem_admit(self, case, need, procs):
        """Waits for the case's turn (the order of --gpumem's queue) and for
        room inside --gpumem-share of the memory and the processes for all
        gpumem searches together (the first always goes); False past
        --gpumem-deadline."""
        share = self.a.gpumem_share
        with self.share_cv:
            try:
                while True:
                    if self.gpumem_late():
                        return False
                    held_bytes, held_procs = self.gpumem_held
                    if self.gpumem_queue[0] == case.name and (held_procs == 0 or (
                            held_bytes + need <= share * self.room and held_procs + procs <= share * self.a.max_procs)):
                        self.gpumem_held = [held_bytes + need, held_procs + procs]
                        return True
                    self.share_cv.wait(1.0)
            finally:
                self.gpumem_queue.remove(case.name)
                self.share_cv.notify_all()

    def gpumem_release(self, need, procs):
        with self.share_cv:
            self.gpumem_held = [self.gpumem_held[0] - need, self.gpumem_held[1] - procs]
            self.share_cv.notify_all()

    def launch(self, argv, gpus, timeout, stdout):
        """Runs argv in its own process group on the GPUs: (exit status or
        "timeout" / "killed", its output if stdout is PIPE, wall seconds)."""
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(gpus))
        for k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
            env.pop(k, None)
        start = time.time()
        rc, out = None, b""
        with self.lock:
            if self.killed:
                return "killed", b"", 0.0
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout,
                                 stderr=subprocess.STDOUT if stdout == subprocess.PIPE else None,
                                 env=env, start_new_session=True)
            self.procs.add(p)
        try:
            out, _ = p.communicate(timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            kill_group(p)
            out, _ = p.communicate()
            rc = "timeout"
        with self.lock:
            self.procs.discard(p)
            if self.killed and rc not in (0, 3):
                rc = "killed"
        return rc, out or b"", time.time() - start

    def run(self, case, batch, why, priority, argv_tail=None, allow_ooms=False, tag=None, timeout=None):
        """One real run under the case's cap (every rank's, under torchrun):
        its record (verdict fits / oom / failed / timeout / killed / not-run).
        An OOM that found the GPU itself full (less free than it asked: the
        runs beside it, not its cap) is run once more; both are kept."""
        rec = self.run_once(case, batch, why, argv_tail, priority, allow_ooms, tag, timeout)
        if rec.get("run_again"):
            self.say("%s: %s %d ran out of memory with the GPU full (%s): once more" % (case.name, case.knob, batch, rec["gpu_full"]))
            rec = self.run_once(case, batch, why, argv_tail, priority, allow_ooms, tag, timeout, again=True)
        return rec

    def run_once(self, case, batch, why, argv_tail, priority, allow_ooms, tag, timeout, again=False):
        need, count, procs = self.placement(case)
        # A check may start until --verify-deadline, later than the searches' --deadline.
        late = self.verify_late if priority == VERIFY else self.late
        gpus = self.gpus.take(need, priority, late, count, procs)
        if gpus is None:
            return {"case": case.name, "batch": batch, "why": why, "verdict": "not-run", "note": "deadline"}
        name = "%s.%s" % (case.name, tag or case.value_tag(batch))
        stats = os.path.join(self.a.work, "logs", name + ".stats.json")
        for old in glob.glob(stats) + glob.glob(stats + ".rank*"):
            os.remove(old)
        launcher = torchrun_argv(case.nproc, self.a.dry_run) if case.nproc else [sys.executable]
        argv = launcher + [self.cap_run, "--cap", str(case.cap), "--stats", stats] + (
            ["--allow-ooms"] if allow_ooms else []) + ["--"] + (argv_tail or case.program_argv(batch, self.a.steps))
        load = self.gpus.load(gpus)
        start = self.elapsed()
        try:
            rc, out, wall = self.launch(argv, gpus, timeout or self.a.run_timeout, subprocess.PIPE)
        finally:
            self.gpus.give(gpus, need, procs)
        with open(os.path.join(self.a.work, "logs", name + ".log"), "wb") as f:
            f.write(out[-4096:])
        # One rank writes STATS itself (cap_run.py names a file a rank only where there are several).
        files = sorted(glob.glob(stats + ".rank*")) if case.nproc > 1 else [stats]
        ranks = [load_json(f) or {} for f in files if os.path.exists(f)]
        if rc in ("timeout", "killed"):
            verdict = rc
        elif any(r.get("verdict") == "oom" for r in ranks) or (not case.nproc and rc == 3):
            verdict = "oom"  # on any rank
        elif rc == 0 and (not case.nproc or (len(ranks) == case.nproc and all(r.get("verdict") == "fits" for r in ranks))):
            verdict = "fits"
        else:
            verdict = "failed"
        first = lambda key: next((r.get(key) for r in ranks if r.get(key) is not None), None)
        rec = {"case": case.name, "batch": batch, "why": why, "verdict": verdict, "exit": rc, "wall": round(wall, 3),
               "gpus": gpus, "gpu_load_at_start": load, "start": round(start, 2),
               "num_ooms": max((r.get("num_ooms") or 0 for r in ranks), default=None) if ranks else None,
               "peak_reserved": max((r.get("peak_reserved") or 0 for r in ranks), default=None),
               "allowed_memory_maximum": first("allowed_memory_maximum"), "raised": first("raised"),
               "program_wall": first("wall")}
        if tag:
            rec["tag"] = tag
        if case.nproc:
            rec["ranks"] = [{k: r.get(k) for k in ("rank", "verdict", "num_ooms", "peak_reserved", "raised")} for r in ranks]
        if verdict == "failed":
            rec["tail"] = out[-600:].decode(errors="replace")
        for key in ("lightning_found_batch", "lightning_trials"):
            found = re.findall(key.encode() + rb"=(\d+)", out)
            if found:
                rec[key] = int(found[-1])
        if verdict == "oom":
            full = gpu_full(out.decode(errors="replace") + "\n".join(r.get("raised") or "" for r in ranks))
            if full:
                rec["gpu_full"] = full
                rec["run_again"] = not again and not late()
        if again:
            rec["second_run"] = True
        self.write("runs", rec)
        return rec

    def run_many(self, case, runs, priority):
        """run() for each (batch, why, tag), all at once where there is
        room: their records, in order."""
        recs = [None] * len(runs)

        def one(i, batch, why, tag):
            recs[i] = self.run(case, batch, why, priority, tag=tag)

        threads = [threading.Thread(target=one, args=(i,) + tuple(r), daemon=True) for i, r in enumerate(runs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [r or {"case": case.name, "batch": b, "why": w, "verdict": "not-run", "note": "no record"}
                for r, (b, w, _) in zip(recs, runs)]

    def limits(self, case):
        """The case's doubling start and its largest value (multiples of its step)."""
        step = case.step
        start = case.start if case.start is not None else -(-self.a.start_bs // step) * step
        limit = case.limit if case.limit is not None else self.a.limit_bs // step * step
        return start, limit

    def next_batches(self, case, lo, hi, tried):
        """The search's next values, --search-width of them: doubling from
        the largest that ran until one runs out of memory, then points
        evenly inside the bracket (width 1: plain bisection), all
        multiples of the case's step (a batch's: 1)."""
        width, step = max(1, self.a.search_width), case.step
        start, limit = self.limits(case)
        if hi is None:
            first = start if not lo else min(lo * 2, limit)
            batches = [min(first << k, limit) for k in range(width)]
        else:
            ulo, uhi = lo // step, hi // step
            batches = [(ulo + (uhi - ulo) * k // (width + 1)) * step for k in range(1, width + 1)]
        return sorted(set(b for b in batches if b > lo and (hi is None or b < hi) and b not in tried))

    def search(self, case, seed=None):
        # seed: an earlier run's incomplete search of this case; its runs
        # stand, and the search goes on from its bracket.
        trials, note = list(seed["trials"]) if seed else [], None
        while True:
            ooms = [t["batch"] for t in trials if t.get("verdict") == "oom"]
            hi = min(ooms) if ooms else None
            lo = max([t["batch"] for t in trials if t.get("verdict") == "fits" and (hi is None or t["batch"] < hi)] or [0])
            if hi is not None and hi - lo <= case.step:
                break
            if hi is None and lo >= self.limits(case)[1]:
                note = "fits at the search's limit %d" % lo
                break
            batches = self.next_batches(case, lo, hi, set(t["batch"] for t in trials))
            if not batches:
                note = "no batch left to try between %d and %s" % (lo, hi)
                break
            if self.late():
                note = "deadline before the run at %s" % ", ".join(map(str, batches))
                break
            recs = self.run_many(case, [(b, "double" if hi is None else "bisect", None) for b in batches], TRUTH)
            for r in recs:
                if r["verdict"] != "not-run":
                    trials.append(r)
                    self.say("%s: %s %d %s in %.1f s" % (case.name, case.knob, r["batch"], r["verdict"], r.get("wall", 0)))
            unrun = [r["batch"] for r in recs if r["verdict"] == "not-run"]
            failed = [r for r in recs if r["verdict"] not in ("fits", "oom", "not-run")]
            if failed:
                note = "the run at %d: %s" % (failed[0]["batch"], failed[0]["verdict"])
                break
            if unrun:
                note = "deadline before the run at %s" % ", ".join(map(str, unrun))
                break
        ooms = [t["batch"] for t in trials if t.get("verdict") == "oom"]
        hi = min(ooms) if ooms else None
        lo = max([t["batch"] for t in trials if t.get("verdict") == "fits" and (hi is None or t["batch"] < hi)] or [0])
        done = note is None and hi is not None and hi - lo <= case.step
        doc = {"case": case.name, "program": case.program, "cap": case.cap_text, "cap_bytes": case.cap, "nproc": case.nproc,
               "shared_gpu": case.shared, **case.knob_doc(), "truth": lo if done else None, "largest_ran": lo, "smallest_oom": hi, "complete": done,
               "note": note, "runs": len(trials), "search_width": self.a.search_width,
               "wall": round(sum(t.get("wall", 0) for t in trials), 2), "trials": trials}
        # The batches just below the answer: memory that is not monotone in the batch.
        below = []
        if done and self.a.below > 0:
            for k in range(1, self.a.below + 1):
                if lo - k * case.step < case.step or self.late():
                    break
                r = self.run(case, lo - k * case.step, "below", BELOW)
                if r["verdict"] == "not-run":
                    break
                below.append(r)
            bad = [r["batch"] for r in below if r["verdict"] != "fits"]
            if bad:
                self.say("%s: NOT MONOTONE below %d: %s did not fit" % (case.name, lo, bad))
        doc["below"] = below
        doc["below_not_fitting"] = [r["batch"] for r in below if r["verdict"] != "fits"]
        self.write("cases", doc)
        self.say("%s: truth %s after %d runs, %.1f s%s" % (case.name, doc["truth"], doc["runs"], doc["wall"], " (" + note + ")" if note else ""))

    def answered(self):
        """One gpumem or Lightning process has ended (answered or not)."""
        with self.lock:
            self.answers_pending -= 1
            if self.answers_pending <= 0:
                self.all_answered.set()

    def verify(self, case, batch, who):
        """Issue 54's check of an answer: the answer --verify times and the
        next value (the next batch, the next multiple of a knob case's
        step) --verify-next times under PyTorch's own cap, at once where
        there is room; one line of verify.jsonl."""
        if not is_int(batch) or batch < 1 or (self.a.verify <= 0 and self.a.verify_next <= 0):
            return
        if self.a.verify_after_all:
            while not self.all_answered.wait(1.0):
                if self.verify_late():
                    break
        suffix = "" if who == "gpumem" else "-" + who
        runs = [(batch, "verify" + suffix, "verify%s%d" % (suffix, i)) for i in range(1, self.a.verify + 1)] + [
            (batch + case.step, "verify-next" + suffix, "verify-next%s%d" % (suffix, i)) for i in range(1, self.a.verify_next + 1)]
        recs = self.run_many(case, runs, VERIFY)
        # An OOM with the GPU itself full twice (the runs beside it) is no verdict on the cap.
        verdicts = [r["verdict"] + ("-gpu-full" if r.get("gpu_full") else "") for r in recs]
        doc = {"case": case.name, "program": case.program, "cap": case.cap_text, "nproc": case.nproc, "who": who, "batch": batch,
               **case.knob_doc(), "next": batch + case.step, "planned": self.a.verify, "planned_next": self.a.verify_next,
               "verdicts": verdicts[:self.a.verify], "next_verdicts": verdicts[self.a.verify:],
               "peak_reserved": [r.get("peak_reserved") for r in recs[:self.a.verify]],
               "walls": [r.get("wall") for r in recs]}
        self.write("verify", doc)
        self.say("%s: %s's answer %s %d: %s; next %d: %s" % (case.name, who, case.knob, batch, " ".join(doc["verdicts"]), batch + case.step,
                                                        " ".join(doc["next_verdicts"]) or "not run"))

    def lightning(self, case):
        name = "lightning_find@%s" % case.cap_text
        doc = {"case": name, "program": case.program, "cap": case.cap_text, "cap_bytes": case.cap, "mode": "binsearch",
               "steps_per_trial": self.a.steps, "init_bs": self.a.lightning_init}
        if self.late():
            doc["note"] = "deadline: not run"
            self.write("lightning", doc)
            self.answered()
            return
        tail = [case.path, "--find", "--mode", "binsearch", "--steps-per-trial", str(self.a.steps), "--init-bs", str(self.a.lightning_init)]
        try:
            r = self.run(case, 0, "lightning", GPUMEM, argv_tail=tail, allow_ooms=True, tag="find", timeout=self.a.lightning_timeout)
        finally:
            self.answered()
        doc.update(found=r.get("lightning_found_batch"), trials=r.get("lightning_trials"), wall=r.get("wall"), verdict=r["verdict"],
                   exit=r.get("exit"), num_ooms=r.get("num_ooms"), gpu_load_at_start=r.get("gpu_load_at_start"), start=r.get("start"))
        self.write("lightning", doc)
        self.say("%s: Lightning found %s in %s s (%s)" % (name, doc["found"], doc["wall"], r["verdict"]))
        self.verify(case, doc["found"], "lightning")

    def gpumem(self, case):
        """gpumem's own answer for the case: one --max-batch process, timed;
        then its check (--verify)."""
        doc = {"case": case.name, "program": case.program, "cap": case.cap_text, "cap_bytes": case.cap, "nproc": case.nproc,
               "shared_gpu": case.shared, **case.knob_doc()}
        need, count, procs, slots = self.gpumem_placement(case)
        gpus = None
        if self.gpumem_admit(case, need, procs):
            gpus = self.gpus.take(need, GPUMEM, self.gpumem_late, count, procs)
            if gpus is None:
                self.gpumem_release(need, procs)
        if gpus is None:
            doc["note"] = "deadline: not run"
            self.write("gpumem", doc)
            self.answered()
            return
        base = os.path.join(self.a.work, "gpumem", case.name)
        launcher = torchrun_argv(case.nproc) if case.nproc else ["python3"]
        argv = [self.a.gpumem, "reuse-sim", "max-batch", "--capacity", case.cap_text] + self.gpumem_args_for(case) + \
            ["--json", "--"] + launcher + case.program_argv(case.placeholder(), self.a.steps)
        load = self.gpus.load(gpus)
        doc.update(argv=argv, gpus=gpus, gpu_load_at_start=load, start=round(self.elapsed(), 2), reserved_slots=slots,
                   reserved_bytes=need)
        try:
            with open(base + ".json", "wb") as out, open(base + ".err", "wb") as err:
                rc, wall = self.launch_to(argv, gpus, self.a.gpumem_timeout, out, err)
        finally:
            self.gpus.give(gpus, need, procs)
            self.gpumem_release(need, procs)
            self.answered()
        doc.update(exit=rc, wall=round(wall, 2))
        parsed = load_json(base + ".json")
        doc["document"] = os.path.relpath(base + ".json", self.a.work)
        doc["max_batch"] = parsed.get("max_batch") if isinstance(parsed, dict) else None
        doc["max_batch_settings"] = parsed.get("max_batch_settings") if isinstance(parsed, dict) else None
        if not isinstance(parsed, dict):
            with open(base + ".err", "rb") as f:
                doc["stderr_tail"] = f.read()[-600:].decode(errors="replace")
        self.write("gpumem", doc)
        mb = doc["max_batch"] if isinstance(doc["max_batch"], dict) else {}
        self.say("%s: gpumem exit %s in %.1f s (started at %.1f s): %s" % (case.name, rc, wall, doc["start"], mb.get("answer") or doc["max_batch"]))
        jobs = mb.get("jobs")
        if is_int(jobs) and jobs > slots:
            self.say("%s: WARNING: gpumem ran %d runs at once where room was kept for %d (--gpumem-slots)" % (case.name, jobs, slots))
        self.verify(case, mb.get("largest_batch"), "gpumem")

    def launch_to(self, argv, gpus, timeout, out, err):
        """launch() with stdout and stderr to files."""
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=",".join(gpus))
        for k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
            env.pop(k, None)
        start = time.time()
        with self.lock:
            if self.killed:
                return "killed", 0.0
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, start_new_session=True)
            self.procs.add(p)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(p)
            rc = "timeout"
        with self.lock:
            self.procs.discard(p)
            if self.killed and rc != 0:
                rc = "killed"
        return rc, time.time() - start

    def kill_all(self):
        with self.lock:
            self.killed = True
            procs = list(self.procs)
        # SIGTERM to all first (gpumem writes what it measured), then SIGKILL what is left.
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.time() + 8
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
        for p in procs:
            if p.poll() is None:
                kill_group(p, grace=2)


def gpumem_order(cases, driver):
    """The order gpumem's searches start in: the longest first, which are
    the torchrun cases (ranks; one run at a time where their ranks share a
    GPU), then the caps taken in turn, smallest first, each in the order
    the programs were given: no cap's searches wait for all of another's,
    and a large cap's room is not taken before the smaller ones start."""
    ranked = [c for c in cases if c.nproc]
    ranked.sort(key=lambda c: driver.gpumem_placement(c)[3])
    caps = sorted(set(c.cap for c in cases if not c.nproc))
    by_cap = [[c for c in cases if not c.nproc and c.cap == cap] for cap in caps]
    turns = [c for i in range(max([len(b) for b in by_cap] or [0])) for b in by_cap if i < len(b) for c in [b[i]]]
    return ranked + turns


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


SIZE_WORDS = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def gpu_full(text):
    """From PyTorch's OOM message ("Tried to allocate 20.00 MiB. GPU 0 has a
    total capacity of 139.81 GiB of which 2.00 MiB is free."): the request
    and the GPU's free memory in words where the GPU had less free than the
    request (its memory was full, not the cap), else None."""
    found = re.findall(r"Tried to allocate ([\d.]+) (bytes|KiB|MiB|GiB)\..*?of which ([\d.]+) (bytes|KiB|MiB|GiB) is free", text)
    for asked, unit, free, free_unit in found:
        if float(free) * SIZE_WORDS[free_unit] < float(asked) * SIZE_WORDS[unit]:
            return "asked %s %s, %s %s free" % (asked, unit, free, free_unit)
    return None


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_jsonl(path):
    docs = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    docs.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return docs


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
    return {g: totals.get(g, 80 * GiB) for g in gpus} if gpus else totals


def main():
    p = argparse.ArgumentParser(description=__doc__, epilog=KNOB_CASES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", required=True)
    p.add_argument("--programs-dir", default=os.path.join(HERE, "batch_programs_w"))
    p.add_argument("--programs", default=None, help="names in --programs-dir, or paths (default: all of it; '' none)")
    p.add_argument("--caps", default="6GiB 14GiB")
    p.add_argument("--cases", default="", help="'prog@CAP ...': cases beside --programs x --caps (a program under one cap only)")
    p.add_argument("--torchrun", default="", help="'prog@CAP[:NPROC] ...' from --torchrun-dir, under torchrun")
    p.add_argument("--knob-cases", default="", help="a JSON file (or text) of cases that search another knob ({seq}, {img}): see below")
    p.add_argument("--knob-select", default="", help="'PATTERN ...': only the --knob-cases whose NAME@CAP matches one (default all)")
    p.add_argument("--torchrun-dir", default=os.path.join(HERE, "torchrun_programs"))
    p.add_argument("--nproc", type=int, default=2, help="ranks of a --torchrun case that names none")
    p.add_argument("--share-gpu", action="store_true", help="all ranks of a torchrun case on one GPU")
    p.add_argument("--gpus", default="")
    p.add_argument("--gpu-memory", default="", help="each GPU's memory (default: nvidia-smi's)")
    p.add_argument("--headroom", default="3GiB", help="kept free on each GPU")
    p.add_argument("--reserve", default="", help="'GPU:SIZE ...' kept for other work on a GPU")
    p.add_argument("--outside", default="1536MiB", help="what a run holds beyond its cap (context, handles)")
    p.add_argument("--nccl", default="1GiB", help="what a torchrun rank holds beyond that (NCCL)")
    p.add_argument("--max-procs", type=int, default=max(1, (os.cpu_count() or 4) * 3 // 4),
                   help="processes running at once, all kinds (default: 3/4 of the cores)")
    p.add_argument("--patience", type=float, default=20, help="seconds a large request waits before smaller ones stop passing it")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--start-bs", type=int, default=8)
    p.add_argument("--limit-bs", type=int, default=8192)
    p.add_argument("--search-width", type=int, default=1, help="the truth search's runs at once (1: one after another)")
    p.add_argument("--below", type=int, default=8)
    p.add_argument("--lightning", action="store_true")
    p.add_argument("--lightning-init", type=int, default=2)
    p.add_argument("--gpumem", default="", help="gpumem's binary: its --max-batch answer for each case")
    p.add_argument("--gpumem-args", default="--full-grid --confirm")
    p.add_argument("--gpumem-slots", type=int, default=1, help="runs of gpumem's at once that room is kept for (its --jobs)")
    p.add_argument("--gpumem-own", default="1GiB", help="what the gpumem process itself holds on its GPU")
    p.add_argument("--gpumem-busy", type=float, default=1.0,
                   help="the share of a search's runs at once that it is counted as processes for (0.75: 3 of --jobs 4)")
    p.add_argument("--gpumem-share", type=float, default=1.0,
                   help="the share of the room and of --max-procs that gpumem searches together may hold (the first always starts)")
    p.add_argument("--gpumem-case-args", action="append", default=[], metavar="CASE=ARGS",
                   help="a case's own gpumem options over --gpumem-args ('unet@14GiB=--max-runs 24')")
    p.add_argument("--gpumem-deadline", type=float, default=None, help="no gpumem search starts after this (default --deadline)")
    p.add_argument("--verify-deadline", type=float, default=None, help="no check of an answer starts after this (default --deadline)")
    p.add_argument("--gpumem-timeout", type=float, default=300)
    p.add_argument("--verify", type=int, default=0, help="runs of each answer under PyTorch's own cap (issue 54: 5)")
    p.add_argument("--verify-next", type=int, default=0, help="runs of the batch after each answer (issue 54: 2)")
    p.add_argument("--verify-after-all", action="store_true", help="the checks wait for every gpumem and Lightning process")
    p.add_argument("--truth-from", action="append", default=[], help="an earlier --work: its complete searches stand for the truth")
    p.add_argument("--no-truth", action="store_true", help="no truth searches (only gpumem and Lightning)")
    p.add_argument("--run-timeout", type=float, default=90)
    p.add_argument("--lightning-timeout", type=float, default=240, help="Lightning's whole search, one process")
    p.add_argument("--deadline", type=float, default=380)
    p.add_argument("--hard-limit", type=float, default=440)
    p.add_argument("--dry-run", action="store_true", help="made-up runs (bench/dryrun_cap_run.py): no GPU, no torch")
    a = p.parse_args()
    a.gpumem_deadline = a.deadline if a.gpumem_deadline is None else a.gpumem_deadline
    a.verify_deadline = a.deadline if a.verify_deadline is None else a.verify_deadline
    if a.dry_run and not a.gpu_memory:
        a.gpu_memory = "141GiB"
    if not a.gpus:
        cvd = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        a.gpus = cvd.replace(",", " ") if cvd else " ".join(sorted(gpu_totals([], ""), key=int)) or "0"
    if a.programs is None:
        a.programs = " ".join(sorted(f[:-3] for f in os.listdir(a.programs_dir) if f.endswith(".py")))
    if a.gpumem:
        a.gpumem = os.path.abspath(a.gpumem)
        if not os.access(a.gpumem, os.X_OK):
            sys.exit("max_batch_truth.py: --gpumem %s is not an executable" % a.gpumem)
    try:
        caps = a.caps.split()
        programs = [program_path(item, a.programs_dir) for item in a.programs.split()]
        cases = [Case(n, path, c) for c in caps for n, path in programs]
        for item in a.cases.split():
            n, _, c = item.rpartition("@")
            if not n or not c:
                raise ValueError("not a case: %r (prog@CAP)" % item)
            name, path = program_path(n, a.programs_dir)
            cases.append(Case(name, path, c))
        for item in a.torchrun.split():
            n, _, rest = item.partition("@")
            c, _, nproc = rest.partition(":")
            cases.append(Case(n, os.path.join(a.torchrun_dir, n + ".py"), c or "4GiB", int(nproc) if nproc else a.nproc, a.share_gpu))
        if a.knob_cases:
            knobbed, knob_args = knob_cases(a.knob_cases, a.knob_select, a.programs_dir)
            cases += knobbed
            a.gpumem_case_args = knob_args + a.gpumem_case_args  # the command line's own go last, over them
        for item in a.reserve.split():
            parse_size(item.split(":")[1])
    except (ValueError, IndexError, KeyError, TypeError, OSError) as e:
        sys.exit("max_batch_truth.py: %s" % e)
    missing = sorted(set(c.path for c in cases if not os.path.isfile(c.path)))
    if missing:
        sys.exit("max_batch_truth.py: no program %s" % ", ".join(missing))
    if a.lightning and not os.path.isfile(os.path.join(a.programs_dir, "lightning_vit.py")):
        sys.exit("max_batch_truth.py: --lightning: no lightning_vit.py in %s" % a.programs_dir)
    if len(set(c.name for c in cases)) < len(cases):
        sys.exit("max_batch_truth.py: a case is named twice")
    d = Driver(a)
    too_big = [c.name for c in cases if d.gpumem_placement(c)[0] > d.room]
    too_wide = [c.name for c in cases if d.placement(c)[1] > len(d.gpus.free)]
    if too_big or too_wide:
        sys.exit("max_batch_truth.py: no room on the GPUs for %s%s" % (
            " ".join(too_big + too_wide), " (more ranks than GPUs: --share-gpu puts them on one)" if too_wide else ""))
    with open(os.path.join(a.work, "settings.json"), "w") as f:
        json.dump(vars(a), f, indent=1)
    # The truth of an earlier run stands where its search is complete.
    known, partial = {}, {}
    for earlier in a.truth_from:
        for doc in read_jsonl(os.path.join(earlier, "cases.jsonl")):
            if doc.get("complete") and doc["case"] not in known:
                known[doc["case"]] = dict(doc, truth_from=os.path.abspath(earlier))
            elif doc.get("largest_ran") or doc.get("smallest_oom"):
                partial.setdefault(doc["case"], doc)  # its search goes on from its bracket
    wanted = set(c.name for c in cases)
    for name in sorted(known):
        if name in wanted:
            d.write("cases", known[name])
    if a.truth_from:
        d.say("truth of %d of the %d cases from %s" % (len(wanted & set(known)), len(cases), " ".join(a.truth_from)))
    threads = []
    # Long single processes first: Lightning's finder, gpumem's searches.
    if a.lightning:
        threads += [threading.Thread(target=d.lightning, args=(Case("lightning_vit", os.path.join(a.programs_dir, "lightning_vit.py"), c),),
                                     daemon=True) for c in caps]
    if a.gpumem:
        order = gpumem_order(cases, d)
        d.gpumem_queue = [c.name for c in order]
        d.say("gpumem searches in this order, together inside %d%% of the room: %s" % (a.gpumem_share * 100, " ".join(d.gpumem_queue)))
        threads += [threading.Thread(target=d.gpumem, args=(c,), daemon=True) for c in order]
    d.answers_pending = len(threads)
    if not threads:
        d.all_answered.set()
    if not a.no_truth:
        threads += [threading.Thread(target=d.search, args=(c, partial.get(c.name)), daemon=True)
                    for c in cases if c.name not in known]
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
    d.say("done: %d jobs%s" % (len(threads), ", some cut short" if any(t.is_alive() for t in threads) else ""))
    for f in d.files.values():
        f.flush()
    table = [sys.executable, os.path.join(HERE, "max_batch_table.py")]
    with open(os.path.join(a.work, "truth.md"), "w") as f:
        subprocess.run(table + ["truth", a.work], stdout=f)
    if a.gpumem:
        with open(os.path.join(a.work, "max-batch.md"), "w") as f:
            subprocess.run(table + ["compare", a.work], stdout=f)
    if a.verify > 0 or a.verify_next > 0:
        with open(os.path.join(a.work, "verify.md"), "w") as f:
            subprocess.run(table + ["verify", a.work], stdout=f)
    os._exit(0)


if __name__ == "__main__":
    main()
