#!/usr/bin/env python3
# A stand-in gpumem for a dry run of bench/converge.sh and bench/max-batch.sh on a machine with
# no torch and no GPU: it runs no program, makes up recordings (a program OOMs when its made-up
# need passes the cap; expandable_segments needs less) and answers reuse-sim tune (--confirm)
# and max-batch with documents of the shapes the scripts read. Checks the scripts, not gpumem:
#   GPUS="0 1" GPUMEM=bench/dryrun_gpumem.py OUT=/tmp/o WORK=/tmp/w bash bench/converge.sh
# max-batch answers from the made-up need bench/dryrun_cap_run.py's runs have (so that
# bench/max_batch_truth.py --dry-run can check the answer): the largest batch that fits, one low
# for llama_prefill (the check of the next batch sees it), with the keys of issue 54 (jobs,
# repeats, batches, varies: side_stream's answer varies from run to run in dryrun_cap_run.py).
# FAKE_SLEEP (seconds a recorded run takes, default 0.2) tries the timeouts and the hard limit;
# FAKE_SCALE (e.g. 0.1) instead: max-batch makes as many runs as it made on the H200 (TYPICAL),
# each its program's seconds there times FAKE_SCALE, --jobs of them side by side as it averaged
# there (2.5 of 4 at once; 1.8 of 2), and answers "not confirmed" (null) where those runs pass
# --max-runs (16);
# Issue 55: a program whose words name another knob in braces ({seq}, {img}) is answered from
# dryrun_cap_run.py's knob_need (its docstring's memory on paper), the largest multiple of
# --multiple-of that fits, with knob and multiple_of in the JSON and the answer's words as gpumem's
# ("longest seq (a multiple of 64) that fits in 6GiB: ..."); vit_img's one step low (the check of
# the next value sees it).
# --confirm is a flag in both jobs: "--confirm 1" is refused as usage (exit 2), as gpumem does, so the
# scripts' --confirm [--max-runs K] forms are what is tried.
import json, os, re, sys, time, random
from dryrun_cap_run import fake_need, largest_fitting, rank_scale, run_seconds, TYPICAL, KNOBS, knob_largest
MiB = 1 << 20
a = sys.argv[1:]
if a[:1] == ["--version"]:
    print("gpumem 0.0-fake"); sys.exit(0)
assert a[0] == "reuse-sim" and a[1] in ("record", "tune", "max-batch"), a
job = a[1]
def opt(name):
    return a[a.index(name) + 1] if name in a else None
def size(t):
    m = re.fullmatch(r"(\d+)(MiB|GiB)", t); return int(m.group(1)) << (20 if m.group(2) == "MiB" else 30)
prog = a[a.index("--") + 1:] if "--" in a else []
def program_of(cmd):  # the program and its arguments, after python3 or torchrun's options
    return next((cmd[i:] for i, x in enumerate(cmd) if x.endswith(".py")), cmd[1:])
def simulate(cmd, cap, conf):
    name = os.path.basename(program_of(cmd)[0])[:-3]
    bs = int(cmd[cmd.index("--bs") + 1]) if "--bs" in cmd else None
    if bs is not None:
        need = fake_need(name, bs)
        return {"num_ooms": 1 if cap and need > cap else 0, "alloc": need, "reserved": need + 50 * MiB, "exit": 1 if cap and need > cap else 0, "caught": None}
    alloc = (800 + 37 * len(name)) * MiB
    reserved = alloc * 13 // 10
    need = alloc + 10 * MiB if "expandable" in conf else reserved
    ooms = 0 if not cap or need <= cap else 1 + (len(name) % 3)
    if cap and cap < alloc * 6 // 10 and name == "lstm_cudnn":
        return {"num_ooms": 1, "alloc": 0, "reserved": 0, "exit": 1, "caught": None}
    return {"num_ooms": ooms, "alloc": alloc, "reserved": min(reserved, cap or reserved), "exit": 0, "caught": ooms}
if job == "record":
    f = opt("-o"); cap = size(opt("--capacity")) if opt("--capacity") else None
    conf = os.environ.get("PYTORCH_ALLOC_CONF", "")
    r = simulate(prog, cap, conf)
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0.2")))
    open(f, "w").write("pickle")
    stats = {"memory_stats": {"num_ooms": r["num_ooms"], "allocated_bytes.all.peak": r["alloc"], "reserved_bytes.all.peak": r["reserved"]},
             "program_ooms": None, "allocator": {"PYTORCH_ALLOC_CONF": conf}}
    json.dump(stats, open(f[:-7] + ".stats.json", "w"))
    if r["caught"] is not None: print("converge-result: caught_ooms=%d; fake" % r["caught"])
    print("gpumem: recorded", f, file=sys.stderr)
    sys.exit(r["exit"])
if "--confirm" in a and (opt("--confirm") or "").isdigit(): print("usage: --confirm is a flag", file=sys.stderr); print('{"error":"x"}'); sys.exit(2)
def knob_answer(cap, target, name, knob):
    """max-batch's document for a knob other than the batch (issue 55)."""
    step = int(opt("--multiple-of") or 1)
    largest = knob_largest(name, [w.replace("{%s}" % knob, "0") for w in target], cap, step)
    answer = largest - step if name == "vit_img" else largest
    jobs = 4 if opt("--jobs") in (None, "auto") else int(opt("--jobs"))
    first = [(v + step - 1) // step * step for v in (128, 256)]
    if first[0] == first[1]:
        first = [step, 2 * step]
    recs = [{"batch": b, "recorded_by_gpumem": True, "why": w, "order": i + 1, "ran_out_of_memory": b > largest, "wall_seconds": 1.0}
            for i, (b, w) in enumerate([(first[0], "first"), (first[1], "first"), (answer // 2 // step * step, "near the answer"),
                                        (answer, "check"), (answer + step, "check above")])]
    if os.environ.get("FAKE_SCALE"):
        runs = TYPICAL.get(name, (15, 14))[1]
        time.sleep(sum(run_seconds(name, i) for i in range(min(runs, int(opt("--max-runs") or 16)))) / {1: 1.0, 2: 1.8, 3: 2.2}.get(jobs, 2.5))
    else:
        time.sleep(float(os.environ.get("FAKE_SLEEP", "0.2")) * len(recs) / min(jobs, 2))
    word = "longest" if any(w in knob.lower() for w in ("seq", "len", "ctx", "context", "token")) else "largest"
    multiple = " (a multiple of %d)" % step if step > 1 else ""
    backing = ("real runs: %d ran 2 of 2 times without an OOM, %d ran out of memory" % (answer, answer + step) if answer == largest else
               "a real run at %d ran without an OOM; the model says %d does not fit" % (answer, answer + step))
    text = "%s %s%s that fits in %s: %d (%s)" % (word, knob, multiple, opt("--capacity"), answer, backing)
    batches = [{"batch": answer, "alloc_conf": None, "runs": 2, "ran": 2, "out_of_memory": 0},
               {"batch": answer + step, "alloc_conf": None, "runs": 2, "ran": 0, "out_of_memory": 2}][:1 if answer < largest else 2]
    return {"max_batch": {"answer": text, "knob": knob, "multiple_of": step, "largest_batch": answer, "answer_status": "ran",
                          "answer_ran": True, "recordings": recs, "jobs": jobs, "repeats": 2, "batches": batches, "varies": [],
                          "settings": [{"alloc_conf": "", "recorded": True, "largest_batch": answer}]}}
if job == "max-batch":
    cap = size(opt("--capacity"))
    target = program_of(prog)
    name = os.path.basename(target[0])[:-3]
    knobs = sorted(set(k for w in prog for k in re.findall(r"\{([A-Za-z_]\w*)\}", w)))
    if knobs and knobs != ["batch"]:
        print(json.dumps(knob_answer(cap, target, name, knobs[0])))
        sys.exit(0)
    nproc = int(prog[prog.index("--nproc-per-node") + 1]) if "--nproc-per-node" in prog else 1
    largest = largest_fitting(name, cap, max(rank_scale(target, r) for r in range(nproc)))
    answer = largest - 1 if name == "llama_prefill" else largest
    jobs = opt("--jobs")
    jobs = 4 if jobs in (None, "auto") else int(jobs)
    recs = [{"batch": b, "recorded_by_gpumem": True, "why": w, "order": i + 1, "ran_out_of_memory": b > largest, "wall_seconds": 1.0}
            for i, (b, w) in enumerate([(4, "first"), (8, "second"), (answer, "check"), (answer + 1, "check above")])]
    varies = [largest + 1] if name == "side_stream" else []
    batches = [{"batch": answer, "alloc_conf": None, "runs": 2, "ran": 2, "out_of_memory": 0},
               {"batch": answer + 1, "alloc_conf": None, "runs": 2, "ran": 1 if varies else 0, "out_of_memory": 1 if varies else 2}]
    if os.environ.get("FAKE_SCALE"):
        runs = TYPICAL.get(name, (15, 14))[1]
        at_once = {1: 1.0, 2: 1.8, 3: 2.2}.get(jobs, 2.5)
        time.sleep(sum(run_seconds(name, i) for i in range(min(runs, int(opt("--max-runs") or 16)))) / at_once)
        if runs > int(opt("--max-runs") or 16):
            print(json.dumps({"max_batch": {"answer": "largest batch that fits in %s: not confirmed: between %d, which ran, and %d, which "
                                            "ran out of memory (the run budget, --max-runs %s, is spent)" % (
                                                opt("--capacity"), answer - 4, answer + 1, opt("--max-runs") or 16),
                                            "largest_batch": None, "answer_ran": False, "recordings": recs, "jobs": jobs}}))
            sys.exit(0)
    else:
        time.sleep(float(os.environ.get("FAKE_SLEEP", "0.2")) * len(recs) / min(jobs, 2))
    text = "largest batch that fits in %s: %d (ran 2 of 2)%s" % (opt("--capacity"), answer,
                                                                "; %d ran 1 of 2: memory varies from run to run here" % (largest + 1) if varies else "")
    print(json.dumps({"max_batch": {"answer": text, "largest_batch": answer, "answer_status": "ran", "answer_ran": True,
                                    "recordings": recs, "jobs": jobs, "repeats": 2, "batches": batches, "varies": varies,
                                    "settings": [{"alloc_conf": "expandable_segments:True", "largest_batch": answer + 3},
                                                 {"alloc_conf": "", "recorded": True, "largest_batch": answer}]}}))
    sys.exit(0)
if job == "tune":
    confs = ["expandable_segments:True", "max_split_size_mb:128,expandable_segments:True", "garbage_collection_threshold:0.8", "roundup_power2_divisions:4", "", "max_split_size_mb:128"]
    rows = [{"rank": i + 1, "alloc_conf": c, "ooms": 0 if "expandable" in c else 2, "peak_reserved": 1000 + i, "retries": 0, "upstream_allocs": 1, "upstream_frees": 0, "first_oom_event": None, "granted_recorded_ooms": 1, "recorded": c == ""} for i, c in enumerate(confs)]
    doc = {"settings": rows, "tune": {"best_alloc_conf": confs[0], "best_fits": True}}
    if "--confirm" in a:
        cap = size(opt("--capacity"))
        runs = []
        for i, c in enumerate(confs[:int(opt("--max-runs") or 1)]):
            r = simulate(prog, cap, c)
            runs.append({"rank": i + 1, "setting": c, "predicted_ooms": 0, "real_ooms": r["num_ooms"], "real_peak_reserved": r["reserved"], "exit_status": 0})
            print("--confirm: real run", i + 1, file=sys.stderr)
            if r["num_ooms"] == 0: break
        doc["confirm"] = {"runs": runs, "answer": "fake answer"}
    print(json.dumps(doc)); sys.exit(0)
sys.exit("fake: unknown " + " ".join(a))
