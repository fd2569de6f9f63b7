#!/usr/bin/env python3
"""The tables of issue 47's benchmark, offline, standard library only.

    max_batch_table.py truth WORK
        the truth searches of bench/max_batch_truth.py (WORK/cases.jsonl,
        WORK/lightning.jsonl): per (program, cap) the largest batch that
        ran under PyTorch's own cap, the runs and seconds the search took,
        the batches below it that did not fit (memory not monotone)."""
import json
import os
import statistics
import sys


def read_jsonl(path):
    docs = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        docs.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return docs


def latest_by_case(docs):
    out = {}
    for d in docs:
        out[d.get("case")] = d
    return out


def cap_key(cap):
    digits = "".join(ch for ch in cap if ch.isdigit() or ch == ".")
    return float(digits) if digits else 0.0


def fmt(v, spec="%s"):
    return "-" if v is None else spec % v


def truth_table(work):
    cases = latest_by_case(read_jsonl(os.path.join(work, "cases.jsonl")))
    lightning = latest_by_case(read_jsonl(os.path.join(work, "lightning.jsonl")))
    out = ["| program | cap | true largest batch | smallest OOM | search runs | search s | below the truth, not fitting | note |",
           "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for c in sorted(cases.values(), key=lambda c: (c.get("program", ""), cap_key(c.get("cap", "")))):
        below = c.get("below") or []
        probed = "%d probed" % len(below) if below else "not probed"
        bad = c.get("below_not_fitting") or []
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c.get("program"), c.get("cap"), fmt(c.get("truth")), fmt(c.get("smallest_oom")), c.get("runs"),
            fmt(c.get("wall"), "%.1f"), ("**%s** (%s)" % (", ".join(map(str, bad)), probed)) if bad else "none (%s)" % probed,
            c.get("note") or ""))
    done = [c for c in cases.values() if c.get("truth") is not None]
    if done:
        out.append("")
        out.append("%d searches complete of %d; median %s runs and %.1f s a search (each run a fresh process; "
                   "several runs shared a GPU, see runs.jsonl's gpu_load_at_start)." % (
                       len(done), len(cases), statistics.median(c["runs"] for c in done),
                       statistics.median(c["wall"] for c in done)))
    if lightning:
        out += ["", "Lightning's BatchSizeFinder (Tuner.scale_batch_size, binsearch) on lightning_vit, the whole process:", "",
                "| cap | Lightning found | trials | process s | exit | true largest batch | Lightning vs truth |",
                "| --- | ---: | ---: | ---: | --- | ---: | --- |"]
        for l in sorted(lightning.values(), key=lambda l: cap_key(l.get("cap", ""))):
            truth = (cases.get("lightning_vit@%s" % l.get("cap")) or {}).get("truth")
            found = l.get("found")
            if found is None or truth is None:
                verdict = "-"
            elif found == truth:
                verdict = "exact"
            elif found < truth:
                verdict = "low by %d" % (truth - found)
            else:
                verdict = "HIGH by %d" % (found - truth)
            out.append("| %s | %s | %s | %s | %s | %s | %s |" % (l.get("cap"), fmt(found), fmt(l.get("trials")), fmt(l.get("wall"), "%.1f"),
                                                           l.get("verdict", l.get("note")), fmt(truth), verdict))
    return "\n".join(out)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("truth",):
        sys.exit(__doc__)
    print(truth_table(argv[2]))


if __name__ == "__main__":
    main(sys.argv)
