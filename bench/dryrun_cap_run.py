#!/usr/bin/env python3
"""A stand-in bench/cap_run.py for a dry run of bench/max_batch_truth.py
(--dry-run) and bench/max-batch-54.sh (DRY=1) on a machine with no torch
and no GPU: it runs no program, it makes up the verdict. Checks the
driver, not gpumem:

    dryrun_cap_run.py --cap BYTES [--stats FILE] [--allow-ooms] -- prog.py --bs N ...
        the program "needs" fake_need(its name, N x its rank's scale)
        bytes: exit 0 (fits) under the cap, 3 (out of memory) over it, a
        stats file as cap_run.py's; side_stream gets, at random but the
        same for the same run's name, a spike of 1.5 samples in one run of
        three (memory that varies from run to run); unet's second check
        at its answer finds the GPU full the first time it runs (an OOM the
        driver runs again); lightning_vit.py --find
        prints a found batch 5 below the largest that fits;
        issue 55's length_programs (gpt_len, llama_len, vit_img) "need"
        knob_need(their words): their docstrings' memory on paper, by
        their knob's value (--seq, --img), quadratic in L for gpt_len
        --attn eager and in S for vit_img;
    dryrun_cap_run.py --torchrun N ARGS...
        torchrun's stand-in: N processes of `python3 ARGS...` with RANK,
        LOCAL_RANK and WORLD_SIZE set; exit 1 if any rank fails.

FAKE_SLEEP: the seconds a run takes (default 0.3); FAKE_SCALE (e.g. 0.1)
instead: a run takes its program's seconds on the H200 (TYPICAL, from
issue 54's runs of 2026-11-29: 10-25 s) times FAKE_SCALE, give or take
10 %."""
import json
import os
import random
import subprocess
import sys
import time
import zlib

MiB = 1 << 20
# program: (seconds a run took on the H200 beside 8-12 others, runs gpumem's
# max-batch made for its answer), from bench/results/2026-11-29-issue54
# (recordings[].wall_seconds, verify-full.jsonl). unet needs more runs than
# --max-runs 16 allows (its answer there: "not confirmed, budget spent").
TYPICAL = {"lightning_vit": (24, 14), "bert_mlm": (20, 9), "t5_train": (18, 9), "resnet50_amp": (11, 12),
           "unet": (13, 20), "gru_lm": (13, 13), "llama_prefill": (19, 16), "grad_accum": (15, 16),
           "side_stream": (11, 16), "fsdp_uneven": (18, 16), "ddp_uneven": (17, 14),
           # issue 55's, on paper (their docstrings): not yet run on the H200
           "gpt_len": (10, 12), "llama_len": (10, 10), "vit_img": (8, 12)}
# The knob each of issue 55's programs is searched by, and its word.
KNOBS = {"gpt_len": "--seq", "llama_len": "--seq", "vit_img": "--img"}


def run_seconds(name, salt=""):
    """The seconds a made-up run of the program takes (FAKE_SCALE or FAKE_SLEEP)."""
    scale = os.environ.get("FAKE_SCALE")
    if not scale:
        return float(os.environ.get("FAKE_SLEEP", "0.3"))
    jitter = 0.9 + 0.2 * random.Random(zlib.crc32(("%s %s" % (name, salt)).encode())).random()
    return TYPICAL.get(name, (15, 14))[0] * float(scale) * jitter


def fake_need(name, batch):
    """The bytes a program of this name "needs" at a batch (dryrun_gpumem.py's formula too)."""
    return 100 * MiB + batch * (3 + len(name)) * MiB


def word(argv, name, default):
    return argv[argv.index(name) + 1] if name in argv[:-1] else default


def knob_need(name, argv, value=None):
    """The bytes one of issue 55's programs "needs" at its knob's value
    (the value in argv, or value): its docstring's memory on paper."""
    if value is None:
        value = int(word(argv, KNOBS[name], "0"))
    if name == "gpt_len":
        bs = int(word(argv, "--bs", "2"))
        need = 2300 * 10 ** 6 + bs * 1700 * 1000 * value
        return need + (bs * 12 * 96 * value * value if word(argv, "--attn", "sdpa") == "eager" else 0)
    if name == "llama_len":
        return 1500 * 10 ** 6 + int(word(argv, "--bs", "4")) * 1050 * 1000 * value
    if name == "vit_img":
        return 500 * 10 ** 6 + int(word(argv, "--bs", "32")) * 255 * 1000 * ((value // 16) ** 2 + 1)
    raise KeyError(name)


def knob_largest(name, argv, cap, step=1, limit=1 << 20):
    """The largest multiple of step whose knob_need is within the cap (0: none)."""
    lo, hi = 0, limit // step + 1  # in steps: lo fits (or is 0), hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if knob_need(name, argv, mid * step) <= cap:
            lo = mid
        else:
            hi = mid
    return lo * step


def rank_scale(prog_argv, rank):
    """The batch multiple of a rank of torchrun_programs' uneven programs (--scales, default 1,2)."""
    if "uneven" not in os.path.basename(prog_argv[0]):
        return 1
    scales = prog_argv[prog_argv.index("--scales") + 1] if "--scales" in prog_argv else "1,2"
    scales = [int(s) for s in scales.split(",")]
    return scales[rank % len(scales)]


def largest_fitting(name, cap, scale=1):
    per = (3 + len(name)) * MiB * scale
    return max(0, (cap - 100 * MiB) // per)


def torchrun(nproc, argv):
    procs = [subprocess.Popen([sys.executable] + argv, env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nproc)))
             for r in range(nproc)]
    return 1 if any(p.wait() != 0 for p in procs) else 0


def main(argv):
    if argv[:1] == ["--torchrun"]:
        return torchrun(int(argv[1]), argv[2:])
    split = argv.index("--")
    opts, prog = argv[:split], argv[split + 1:]
    cap = int(opts[opts.index("--cap") + 1])
    stats = opts[opts.index("--stats") + 1] if "--stats" in opts else None
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    if stats and world > 1:
        stats = "%s.rank%d" % (stats, rank)
    name = os.path.basename(prog[0])[:-3]
    time.sleep(run_seconds(name, "%s %s" % (stats, time.time())))
    if "--find" in prog:
        found = largest_fitting(name, cap) - 5
        print("lightning_found_batch=%d lightning_trials=13 mode=binsearch" % found)
        status, need = 0, fake_need(name, found)
    elif name in KNOBS:
        batch = int(word(prog, KNOBS[name], "0"))
        need = knob_need(name, prog)
        status = 0 if need <= cap else 3
        print("%s (stand-in): %s %d, need %d of %d: %s" % (name, KNOBS[name][2:], batch, need, cap, "fits" if status == 0 else "OOM"))
    else:
        batch = int(prog[prog.index("--bs") + 1]) * rank_scale(prog, rank)
        need = fake_need(name, batch)
        if name == "side_stream" and random.Random(zlib.crc32((stats or "").encode())).random() < 1 / 3.0:
            need += (3 + len(name)) * MiB * 3 // 2
        status = 0 if need <= cap else 3
        if name == "unet" and (stats or "").endswith(".verify2.stats.json") and not os.path.exists(stats + ".full"):
            open(stats + ".full", "w").close()  # the first of the two runs finds the GPU full
            print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
                  "of 139.81 GiB of which 2.00 MiB is free. (stand-in)")
            status = 3
        print("%s (stand-in): rank %d, batch %d, need %d of %d: %s" % (name, rank, batch, need, cap, "fits" if status == 0 else "OOM"))
    if stats:
        doc = {"cap": cap, "exit": status, "verdict": {0: "fits", 3: "oom"}[status], "num_ooms": 1 if status else 0,
               "peak_reserved": min(need, cap), "allowed_memory_maximum": cap, "wall": 0.3, "rank": str(rank) if world > 1 else None,
               "raised": "OutOfMemoryError: stand-in" if status else None}
        with open(stats, "w") as f:
            json.dump(doc, f)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
