#!/usr/bin/env python3
"""bench/hook_effect.sh's two middle ways of running a program under a cap:
HOOK_EFFECT=history: the cap set first (as bench/cap_run.py), then
torch.cuda.memory._record_memory_history as gpumem's hook turns it on;
HOOK_EFFECT=lazycap: the cap set when the program first initializes CUDA
(torch.cuda._lazy_call, as the hook does), no history.

    hook_effect_run.py CAP_BYTES STATS.json prog.py ARGS...

Writes STATS.json: verdict (fits / oom), num_ooms, peak_reserved, retries."""
import json
import math
import os
import runpy
import sys

import torch

cap, stats_path, prog = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
way = os.environ.get("HOOK_EFFECT", "history")


def set_cap():
    total = torch.cuda.mem_get_info(0)[1]
    fraction = min(1.0, cap / float(total))
    while fraction < 1.0 and int(fraction * float(total)) < cap:
        fraction = math.nextafter(fraction, 2.0)
    torch.cuda.set_per_process_memory_fraction(fraction, 0)


if way == "history":
    set_cap()
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python")
else:
    torch.cuda._lazy_call(set_cap)
verdict = "fits"
try:
    sys.argv = prog
    runpy.run_path(prog[0], run_name="__main__")
except torch.OutOfMemoryError:
    verdict = "oom"
s = torch.cuda.memory_stats()
if s.get("num_ooms", 0):
    verdict = "oom"
json.dump({"way": way, "verdict": verdict, "num_ooms": s.get("num_ooms", 0), "peak_reserved": s.get("reserved_bytes.all.peak"),
           "retries": s.get("num_alloc_retries")}, open(stats_path, "w"))
