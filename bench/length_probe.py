#!/usr/bin/env python3
"""Issue 55's programs measured once at a few values of their knob, all at
once, each under bench/cap_run.py with a cap no run reaches (--cap,
default 100GiB): the peak reserved and allocated and the seconds of each
run, and, from the peaks, the largest multiple each case's knob would
reach under the benchmark's caps (a line through the two largest values,
or the parabola through three where it bends upward: eager attention's
L^2, the ViT's S^2). A check of the programs' memory on paper before the
searches spend their time; standard library only.

    length_probe.py --cases bench/length_programs/cases-55.json --work DIR
                    [--values "gpt_len_eager=256,512,1024 ..."] [--caps "6GiB 14GiB"] [--dry-run]

DIR gets probe.jsonl (one line a run) and probe.md (the table)."""
import argparse
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from max_batch_truth import knob_cases, parse_size  # noqa: E402

DEFAULT_VALUES = {"gpt_len_eager": "256,512,1024", "gpt_len_sdpa": "512,1024,2048", "llama_len": "512,1024,2048",
                  "vit_img": "224,320,448"}


def fit(points):
    """Coefficients (c0, c1, c2) of the parabola through the three largest
    points where it bends upward, else of the line through the two largest."""
    pts = sorted(points)[-3:]
    if len(pts) == 3:
        (x0, y0), (x1, y1), (x2, y2) = pts
        d01, d12 = (y1 - y0) / (x1 - x0), (y2 - y1) / (x2 - x1)
        c2 = (d12 - d01) / (x2 - x0)
        if c2 > 0:
            c1 = d01 - c2 * (x0 + x1)
            return y0 - c1 * x0 - c2 * x0 * x0, c1, c2
    (x0, y0), (x1, y1) = pts[-2:]
    c1 = (y1 - y0) / (x1 - x0)
    return y1 - c1 * x1, c1, 0.0


def largest_under(coef, cap, step, limit=1 << 20):
    c0, c1, c2 = coef
    best, v = None, step
    while v <= limit:
        if c0 + c1 * v + c2 * v * v > cap:
            break
        best, v = v, v + step
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=os.path.join(HERE, "length_programs", "cases-55.json"))
    p.add_argument("--work", required=True)
    p.add_argument("--values", default="", help="'NAME=V,V,V ...' (default: %s)" % " ".join("%s=%s" % kv for kv in DEFAULT_VALUES.items()))
    p.add_argument("--caps", default="6GiB 14GiB", help="the caps the answers are foretold for")
    p.add_argument("--cap", default="100GiB", help="the cap each probe runs under (none should reach it)")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args()
    values = dict(DEFAULT_VALUES)
    for item in a.values.split():
        name, _, vals = item.partition("=")
        values[name] = vals
    os.makedirs(os.path.join(a.work, "logs"), exist_ok=True)
    cases, _ = knob_cases(a.cases, "", HERE)
    byname = {}
    for c in cases:
        byname.setdefault(c.program, c)  # one a program (the caps are only foretold)
    cap_run = os.path.join(HERE, "dryrun_cap_run.py" if a.dry_run else "cap_run.py")
    runs, lock, t0 = [], threading.Lock(), time.time()

    def one(case, value):
        tag = "%s.%s%d" % (case.program, case.knob, value)
        stats = os.path.join(a.work, "logs", tag + ".stats.json")
        argv = [sys.executable, cap_run, "--cap", str(parse_size(a.cap)), "--stats", stats, "--"] + case.program_argv(value, a.steps)
        start = time.time()
        try:
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=a.timeout)
            rc, out = r.returncode, r.stdout
        except subprocess.TimeoutExpired as e:
            rc, out = "timeout", e.stdout or b""
        with open(os.path.join(a.work, "logs", tag + ".log"), "wb") as f:
            f.write(out[-4096:])
        try:
            with open(stats) as f:
                st = json.load(f)
        except (OSError, ValueError):
            st = {}
        rec = {"name": case.program, "knob": case.knob, "value": value, "exit": rc, "wall": round(time.time() - start, 2),
               "program_wall": st.get("wall"), "peak_reserved": st.get("peak_reserved"), "peak_allocated": st.get("peak_allocated"),
               "last_line": (out.decode(errors="replace").strip().splitlines() or [""])[-1][:300]}
        with lock:
            runs.append(rec)
            with open(os.path.join(a.work, "probe.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\n")
        print("[%5.1f s] %s %s %d: exit %s, peak reserved %s, %.1f s" % (time.time() - t0, case.program, case.knob, value, rc,
                                                                          rec["peak_reserved"], rec["wall"]), file=sys.stderr, flush=True)

    threads = [threading.Thread(target=one, args=(c, int(v))) for name, c in sorted(byname.items())
               for v in values.get(name, "").split(",") if v]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    caps = a.caps.split()
    out = ["| case | knob | value | exit | peak reserved MiB | peak allocated MiB | run s | program s |",
           "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |"]
    for r in sorted(runs, key=lambda r: (r["name"], r["value"])):
        mib = lambda v: "-" if v is None else "%.0f" % (v / 1048576.0)
        out.append("| %s | %s | %d | %s | %s | %s | %.1f | %s |" % (r["name"], r["knob"], r["value"], r["exit"], mib(r["peak_reserved"]),
                                                                 mib(r["peak_allocated"]), r["wall"],
                                                                 "-" if r["program_wall"] is None else "%.1f" % r["program_wall"]))
    out += ["", "Foretold from the peaks (no cap): the largest multiple under each cap (a line through the two largest values, "
            "or the parabola through three where it bends upward):", "",
            "| case | fit | " + " | ".join(caps) + " |", "| --- | --- | " + " | ".join("---:" for _ in caps) + " |"]
    for name, c in sorted(byname.items()):
        pts = [(r["value"], r["peak_reserved"]) for r in runs if r["name"] == name and r["exit"] == 0 and r["peak_reserved"]]
        if len(pts) < 2:
            out.append("| %s | too few runs | %s |" % (name, " | ".join("-" for _ in caps)))
            continue
        coef = fit(pts)
        words = "%.0f + %.0f x %s%s" % (coef[0], coef[1], c.knob, " + %.1f x %s^2" % (coef[2], c.knob) if coef[2] else "")
        out.append("| %s | %s | %s |" % (name, words, " | ".join(str(largest_under(coef, parse_size(cap), c.step, c.limit or 1 << 20))
                                                                 for cap in caps)))
    with open(os.path.join(a.work, "probe.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
