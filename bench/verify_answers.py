#!/usr/bin/env python3
"""gpumem's max-batch answers run again under PyTorch's own cap (issue 54's
check, for answers a max_batch_truth.py run left unchecked): for each line
of WORK/gpumem.jsonl with an answer (max_batch.largest_batch), the answer
--verify times and the next batch --verify-next times, each a fresh process
under bench/cap_run.py (the same bytes as gpumem's cap), as many at once as
--room bytes of GPU memory hold (a run takes its cap plus --outside; a
torchrun case one of each a rank) and --procs processes. Standard library
only. Writes OUT.jsonl (one line a run) and OUT.md (a table):

    verify_answers.py WORK OUT [--verify 5] [--verify-next 2] [--room 130GiB] [--procs 12] [--deadline S] [--dry-run]

bench/max-batch-54.sh verify runs it on an earlier run's work (FROM=).
--dry-run: made-up runs (bench/dryrun_cap_run.py and its torchrun), no GPU.

A case of issue 55 that searched another knob (gpumem.jsonl's knob,
multiple_of: --seq {seq} in multiples of 64) has that placeholder filled
in, and its next value is the answer plus one step.

A run's verdict is cap_run.py's exit status: 0 fits, 3 out of memory, else
failed; past --run-timeout, timeout; not started by --deadline, not-run."""
import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
UNITS = {"B": 1, "MiB": 1 << 20, "GiB": 1 << 30}


def size(text):
    m = re.fullmatch(r"(\d+)(B|MiB|GiB)", text)
    if not m:
        raise SystemExit("verify_answers.py: not a size: %r" % text)
    return int(m.group(1)) * UNITS[m.group(2)]


def command(doc, batch, stats, dry_run=False):
    """The program after gpumem's --, under cap_run.py (and torchrun's ranks)."""
    argv = doc["argv"]
    program = argv[argv.index("--") + 1:]
    program = [w.replace("{%s}" % (doc.get("knob") or "batch"), str(batch)) for w in program]
    cap = ["--cap", str(doc["cap_bytes"]), "--stats", stats, "--"]
    cap_run = os.path.join(HERE, "dryrun_cap_run.py" if dry_run else "cap_run.py")
    if os.path.basename(program[0]).startswith("python"):
        return [sys.executable, cap_run] + cap + program[1:]
    # torchrun [its options] prog.py ARGS: cap_run.py goes before prog.py.
    at = next(i for i, w in enumerate(program) if w.endswith(".py"))
    head = [sys.executable, cap_run, "--torchrun", str(ranks_of(doc)), cap_run] if dry_run else program[:at] + [cap_run]
    return head + cap + program[at:]


def step_of(doc):
    step = doc.get("multiple_of")
    return step if isinstance(step, int) and step > 0 else 1


def ranks_of(doc):
    argv = doc["argv"]
    return int(argv[argv.index("--nproc-per-node") + 1]) if "--nproc-per-node" in argv else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("work")
    p.add_argument("out")
    p.add_argument("--verify", type=int, default=5)
    p.add_argument("--verify-next", type=int, default=2)
    p.add_argument("--room", default="130GiB")
    p.add_argument("--outside", default="1536MiB")
    p.add_argument("--procs", type=int, default=12)
    p.add_argument("--run-timeout", type=float, default=120)
    p.add_argument("--deadline", type=float, default=400)
    p.add_argument("--dry-run", action="store_true", help="made-up runs (bench/dryrun_cap_run.py): no GPU, no torch")
    a = p.parse_args()
    docs = []
    with open(os.path.join(a.work, "gpumem.jsonl")) as f:
        for line in f:
            d = json.loads(line)
            mb = d.get("max_batch") if isinstance(d.get("max_batch"), dict) else {}
            if isinstance(mb.get("largest_batch"), int) and d.get("argv"):
                docs.append(d)
    tasks = []
    for d in docs:
        b = d["max_batch"]["largest_batch"]
        tasks += [(d, b, "answer", i) for i in range(a.verify)] + [(d, b + step_of(d), "next", i) for i in range(a.verify_next)]
    os.makedirs(a.out + ".logs", exist_ok=True)
    room, procs = [size(a.room)], [a.procs]
    cv = threading.Condition()
    results = []
    t0 = time.time()

    def need(d):
        return ranks_of(d) * (d["cap_bytes"] + size(a.outside))

    def one(task):
        d, batch, kind, i = task
        n = need(d)
        with cv:
            while (room[0] < n or procs[0] < ranks_of(d)) and time.time() - t0 < a.deadline:
                cv.wait(1.0)
            if time.time() - t0 >= a.deadline:
                results.append({"case": d["case"], "batch": batch, "kind": kind, "verdict": "not-run"})
                return
            room[0] -= n
            procs[0] -= ranks_of(d)
        name = "%s.%s%d.%s%d" % (d["case"], kind, i, "bs" if (d.get("knob") or "batch") == "batch" else d["knob"], batch)
        stats = os.path.join(a.out + ".logs", name + ".stats.json")
        start = time.time()
        env = dict(os.environ)
        for k in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
            env.pop(k, None)
        try:
            r = subprocess.run(command(d, batch, stats, a.dry_run), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               timeout=a.run_timeout, stdin=subprocess.DEVNULL)
            rc, out = r.returncode, r.stdout
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", e.stdout or b""
        finally:
            with cv:
                room[0] += n
                procs[0] += ranks_of(d)
                cv.notify_all()
        with open(os.path.join(a.out + ".logs", name + ".log"), "wb") as f:
            f.write(out[-3000:])
        verdict = {0: "fits", 3: "oom"}.get(rc, "failed" if rc != "timeout" else "timeout")
        peak = None
        try:
            with open(stats) as f:
                peak = json.load(f).get("peak_reserved")
        except (OSError, ValueError):
            pass
        rec = {"case": d["case"], "batch": batch, "kind": kind, "verdict": verdict, "exit": rc, "wall": round(time.time() - start, 2),
               "peak_reserved": peak}
        with cv:
            results.append(rec)
        print("[%5.1f s] %s %s %d: %s" % (time.time() - t0, d["case"], kind, batch, verdict), file=sys.stderr, flush=True)

    threads = [threading.Thread(target=one, args=(t,)) for t in tasks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with open(a.out + ".jsonl", "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    rows = ["| case | gpumem's answer | gpumem says | answer run again | next batch | gpumem runs / s |", "| --- | ---: | --- | --- | --- | ---: |"]
    failed = []
    for d in docs:
        mb = d["max_batch"]
        b = mb["largest_batch"]
        ans = [r["verdict"] for r in results if r["case"] == d["case"] and r["kind"] == "answer"]
        nxt = [r["verdict"] for r in results if r["case"] == d["case"] and r["kind"] == "next"]
        ran = sum(v == "fits" for v in ans)
        tried = sum(v in ("fits", "oom") for v in ans)
        if tried and ran < tried:
            failed.append(d["case"])
        runs = sum(1 for r in mb.get("recordings", []) if r.get("recorded_by_gpumem"))
        said = mb.get("answer", "").split(": ", 1)[-1][:90]
        rows.append("| %s | %d | %s | %d/%d fit%s | %d/%d fit | %d / %s |" % (
            d["case"], b, said.replace("|", "/"), ran, len(ans), "" if tried == len(ans) else " (%d not run or failed)" % (len(ans) - tried),
            sum(v == "fits" for v in nxt), len(nxt), runs, d.get("wall")))
    rows.append("")
    rows.append("%d answers checked; answers that ran out of memory in any repeat: %d%s" % (
        len(docs), len(failed), (" (" + ", ".join(failed) + ")") if failed else ""))
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(rows) + "\n")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
