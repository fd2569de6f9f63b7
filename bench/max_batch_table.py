#!/usr/bin/env python3
"""The tables of issue 47's benchmark, offline, standard library only.

    max_batch_table.py truth WORK
        the truth searches of bench/max_batch_truth.py (WORK/cases.jsonl,
        WORK/lightning.jsonl): per (program, cap) the largest batch that
        ran under PyTorch's own cap, the runs and seconds the search took,
        the batches below it that did not fit (memory not monotone).
    max_batch_table.py compare WORK [TRUTH_WORK]
        gpumem's answers (WORK/gpumem.jsonl, from max_batch_truth.py
        --gpumem) against the truth (WORK/cases.jsonl, else TRUTH_WORK's):
        exact / one low / low by N / above the search at a batch that ran /
        WRONG-HIGH, whether the answer ran, the best setting's answer and
        whether it ran, real runs and seconds beside the search's and
        Lightning's (WORK/lightning.jsonl, else TRUTH_WORK's), medians.
    max_batch_table.py verify WORK [TRUTH_WORK]
        issue 54's check of each answer (WORK/verify.jsonl, from
        max_batch_truth.py --verify N --verify-next K): gpumem's answer and
        what it says, the answer's N runs under PyTorch's own cap ("5/5
        fit", or "3/5 fit: FAILS"), the next batch's K runs, the truth and
        gpumem against it, gpumem's runs, the runs it ran at once (jobs),
        the repeats it asked at the answer, its seconds and the batches
        whose runs it saw disagree; a summary line (the answers that
        failed in any repeat must be 0); and, where Lightning's finder ran,
        the two side by side, both answers checked alike.

Issue 55's cases search another knob ({seq}, {img}; their records say
knob and multiple_of): where any case does, each table has a knob column
(seq, or "img, x16": searched in multiples of 16), "one low" is one step
low, and the next value checked is the answer plus one step.

Every gpumem JSON key is read defensively (--max-batch's document was
being changed when this was written)."""
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


def knob_of(doc):
    return (doc or {}).get("knob") or "batch"


def step_of(doc):
    step = (doc or {}).get("multiple_of")
    return step if is_int(step) and step > 0 else 1


def knob_label(doc):
    """The knob a case searched, in a table cell: "seq", "img, x16"."""
    return knob_of(doc) + (", x%d" % step_of(doc) if step_of(doc) > 1 else "")


def any_knob(*groups):
    """Whether any record of these searched a knob other than the batch (the tables then say which)."""
    return any(knob_of(d) != "batch" for docs in groups for d in docs)


def with_knob(header, cells, doc, at, knobs):
    """A table row (or its header) with the knob's column inserted after column at, where knobs."""
    if not knobs:
        return cells
    return cells[:at] + [header if doc is None else knob_label(doc)] + cells[at:]


def row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def truth_table(work):
    cases = latest_by_case(read_jsonl(os.path.join(work, "cases.jsonl")))
    lightning = latest_by_case(read_jsonl(os.path.join(work, "lightning.jsonl")))
    knobs = any_knob(cases.values())
    out = [row(with_knob("knob", ["program", "cap", "true largest" if knobs else "true largest batch", "smallest OOM", "search runs",
                                  "search s", "below the truth, not fitting", "note"], None, 2, knobs)),
           row(with_knob("---", ["---", "---", "---:", "---:", "---:", "---:", "---", "---"], None, 2, knobs))]
    for c in sorted(cases.values(), key=lambda c: (c.get("program", ""), cap_key(c.get("cap", "")))):
        below = c.get("below") or []
        probed = "%d probed" % len(below) if below else "not probed"
        bad = c.get("below_not_fitting") or []
        out.append(row(with_knob(None, [
            c.get("program"), c.get("cap"), fmt(c.get("truth")), fmt(c.get("smallest_oom")), c.get("runs"),
            fmt(c.get("wall"), "%.1f"), ("**%s** (%s)" % (", ".join(map(str, bad)), probed)) if bad else "none (%s)" % probed,
            c.get("note") or ""], c, 2, knobs)))
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


def walk_keys(node, pred, path=""):
    """(path, value) of every key of a JSON document for which pred(key, value)."""
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            if pred(k, v):
                found.append((path + k, v))
            found += walk_keys(v, pred, path + k + ".")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += walk_keys(v, pred, "%s[%d]." % (path.rstrip("."), i))
    return found


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def gpumem_runs(mb):
    """The real runs gpumem made: its recordings (each a run of the program)
    and --confirm's runs that ran (a run a check already made is not run
    again where gpumem says so: no wall time, or a note)."""
    recs = [r for r in (mb.get("recordings") or []) if isinstance(r, dict) and r.get("recorded_by_gpumem", True)]
    confirm = [c for c in (mb.get("confirm_runs") or []) if isinstance(c, dict)
               and isinstance(c.get("wall_seconds"), (int, float)) and c.get("wall_seconds") > 0]
    return recs, confirm


def answer_ran(mb, g, recs, confirm):
    """gpumem's answer ran for real without an OOM: its answer_ran, or a
    recording or a --confirm run of its at that batch."""
    if g is None:
        return False
    return mb.get("answer_ran") is True or any(r.get("batch") == g and r.get("ran_out_of_memory") is False for r in recs) or any(
        c.get("batch") == g and c.get("real_ooms") == 0 and c.get("exit_status", 0) == 0 for c in confirm)


def verdict_of(g, truth, ran, truth_runs, step=1):
    """gpumem's answer g against the truth, in words (step: the multiples searched; one low is one step)."""
    if g is None or truth is None:
        return "-"
    if g == truth:
        return "exact"
    if g == truth - step:
        return "one low" if step == 1 else "one low (one step, %d)" % step
    if g < truth:
        return "low by %d" % (truth - g)
    ours = truth_runs.get(g)
    if ran and ours == "oom":
        return "above the search (+%d): gpumem's run at %d fitted, ours ran out of memory" % (g - truth, g)
    if ran or ours == "fits":
        return "above the search at a batch that ran (+%d)" % (g - truth)
    return "**WRONG-HIGH** (+%d)" % (g - truth)


def compare_table(work, truth_work=None):
    cases = latest_by_case(read_jsonl(os.path.join(work, "cases.jsonl")))
    if truth_work:
        for k, v in latest_by_case(read_jsonl(os.path.join(truth_work, "cases.jsonl"))).items():
            cases.setdefault(k, v)
    lightning = latest_by_case(read_jsonl(os.path.join(work, "lightning.jsonl"))) or (
        latest_by_case(read_jsonl(os.path.join(truth_work, "lightning.jsonl"))) if truth_work else {})
    answers = latest_by_case(read_jsonl(os.path.join(work, "gpumem.jsonl")))
    knobs = any_knob(answers.values(), cases.values())
    out = [row(with_knob("knob", ["program", "cap", "gpumem", "answer ran", "true largest", "gpumem vs truth", "below the truth, not fitting",
                                  "best setting: answer (ran?)", "gpumem runs / s", "search runs / s", "notes"], None, 2, knobs)),
           row(with_knob("---", ["---", "---", "---:", "---", "---:", "---", "---", "---", "---:", "---:", "---"], None, 2, knobs))]
    verdicts, g_runs, g_walls, s_runs, s_walls, details = [], [], [], [], [], []
    for name in sorted(set(answers) | set(cases), key=lambda n: (n.split("@")[0], cap_key(n.split("@")[-1]))):
        a = answers.get(name) or {}
        c = cases.get(name) or {}
        if not a and name.startswith("lightning_find"):
            continue
        mb = a.get("max_batch") if isinstance(a.get("max_batch"), dict) else {}
        g = mb.get("largest_batch") if is_int(mb.get("largest_batch")) else None
        recs, confirm = gpumem_runs(mb)
        ran = answer_ran(mb, g, recs, confirm)
        truth = c.get("truth")
        truth_runs = {}
        for t in (c.get("trials") or []) + (c.get("below") or []):
            truth_runs[t.get("batch")] = t.get("verdict")
        v = verdict_of(g, truth, ran, truth_runs, step_of(a or c))
        notes = []
        if a.get("exit") not in (0, None):
            notes.append("gpumem exit %s" % a.get("exit"))
        if a.get("note"):
            notes.append(a["note"])
        if g is None and mb.get("answer"):
            notes.append("gpumem: " + str(mb["answer"])[:200])
        if g is None and a.get("stderr_tail"):
            line = a["stderr_tail"].strip().splitlines()[-1][:200]
            notes.append(line if line.startswith("gpumem") else "gpumem: " + line)
        mono = walk_keys(mb, lambda k, val: "monoton" in k and val not in (None, False, [], ""))
        if mono:
            notes.append("gpumem says not monotone: " + "; ".join("%s=%s" % (k, json.dumps(val)[:80]) for k, val in mono))
        ranks = walk_keys(mb, lambda k, val: "rank" in k and k not in ("rank",) and val not in (None, [], ""))
        if ranks:
            notes.append("ranks: " + "; ".join("%s=%s" % (k, json.dumps(val)[:60]) for k, val in ranks[:3]))
        confirmed = (mb.get("confirm") or {}).get("confirmed_batch") if isinstance(mb.get("confirm"), dict) else None
        if is_int(confirmed) and confirmed != g:
            notes.append("--confirm's answer %d: %s" % (confirmed, verdict_of(confirmed, truth, True, truth_runs, step_of(a or c))))
        if c.get("truth_from"):
            notes.append("truth from an earlier run")
        if c.get("note"):
            notes.append("search: " + c["note"])
        best_conf, best = mb.get("best_alloc_conf"), mb.get("best_largest_batch")
        best_ran = walk_keys(mb, lambda k, val: k.startswith("best") and "ran" in k and isinstance(val, bool))
        if best_conf is None or best is None:
            best_text = "-"
        else:
            status = mb.get("best_answer_status")  # gpumem's own word: "ran", "model only" or "not confirmed"
            ran_text = status if isinstance(status, str) else (
                ("ran" if best_ran[0][1] else "ran out of memory") if best_ran else "model only")
            if best_conf in ("", None) or best == g:
                ran_text = "the recorded setting's" if best == g else ran_text
            best_text = "`%s`: %s (%s)" % (best_conf or "defaults", best, ran_text)
        below_bad = c.get("below_not_fitting") or []
        below = "**%s** (%d probed)" % (", ".join(map(str, below_bad)), len(c.get("below") or [])) if below_bad else (
            "none (%d probed)" % len(c.get("below") or []) if c.get("below") else "not probed")
        nruns = len(recs) + len(confirm)
        wall = a.get("wall")
        if a and g is not None:
            verdicts.append(v)
            g_runs.append(nruns)
            if isinstance(wall, (int, float)):
                g_walls.append(wall)
        if truth is not None:
            s_runs.append(c.get("runs"))
            s_walls.append(c.get("wall"))
        out.append(row(with_knob(None, [
            name.split("@")[0], name.split("@")[-1], fmt(g),  # the cap with the ranks' layout (ddp_uneven@4GiB:2-1gpu)
            {True: "yes", False: "**no**"}[ran] if g is not None else "-", fmt(truth), v, below, best_text,
            "%s / %s" % (nruns if a else "-", fmt(wall, "%.1f")), "%s / %s" % (c.get("runs", "-"), fmt(c.get("wall"), "%.1f")),
            "; ".join(notes).replace("|", "/")], a or c, 2, knobs)))
        if a:
            details.append("- %s: gpumem's runs (batch: why, OOM?): %s; --confirm: %s" % (
                name, ", ".join("%s: %s%s" % (r.get("batch"), r.get("why"), ", OOM" if r.get("ran_out_of_memory") else "") for r in
                                sorted(recs, key=lambda r: r.get("order") or 0)) or "-",
                ", ".join("%s: %s" % (x.get("batch"), "OOM" if (x.get("real_ooms") or 0) > 0 else "fits") for x in confirm) or "-"))
    exactish = [v for v in verdicts if v == "exact" or v.startswith("above the search at a batch that ran")]
    wrong = [v for v in verdicts if "WRONG" in v]
    out.append("")
    if verdicts:
        out.append("%d answers: %d exact, %d one low, %d lower, %d above the search at a batch that ran, %d WRONG-HIGH; "
                   "exact or above at a batch that ran: %.0f %%." % (
                       len(verdicts), verdicts.count("exact"), len([v for v in verdicts if v.startswith("one low")]), len([v for v in verdicts if v.startswith("low by")]),
                       len([v for v in verdicts if v.startswith("above")]), len(wrong), 100.0 * len(exactish) / len(verdicts)))
    if g_runs:
        out.append("Median real runs and seconds an answer: gpumem %s runs, %.1f s; the doubling-and-bisection search %s runs, %.1f s "
                   "(wall seconds of processes that shared their GPUs with others; see gpu_load_at_start)." % (
                       statistics.median(g_runs), statistics.median(g_walls) if g_walls else float("nan"),
                       statistics.median(s_runs) if s_runs else "-", statistics.median(s_walls) if s_walls else float("nan")))
    if lightning:
        out += ["", "Beside Lightning's BatchSizeFinder (binsearch) on lightning_vit, the whole process each:", "",
                "| cap | true largest | Lightning found | vs truth | trials | s | gpumem | vs truth | runs | s |",
                "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: |"]
        for l in sorted(lightning.values(), key=lambda l: cap_key(l.get("cap", ""))):
            name = "lightning_vit@%s" % l.get("cap")
            truth = (cases.get(name) or {}).get("truth")
            a = answers.get(name) or {}
            mb = a.get("max_batch") if isinstance(a.get("max_batch"), dict) else {}
            g = mb.get("largest_batch") if is_int(mb.get("largest_batch")) else None
            recs, confirm = gpumem_runs(mb)
            ran = answer_ran(mb, g, recs, confirm)
            found = l.get("found")
            lv = "-" if found is None or truth is None else verdict_of(found, truth, False, {})
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                l.get("cap"), fmt(truth), fmt(found), lv, fmt(l.get("trials")), fmt(l.get("wall"), "%.1f"), fmt(g),
                verdict_of(g, truth, ran, {}), len(recs) + len(confirm) if a else "-", fmt(a.get("wall"), "%.1f")))
    return "\n".join(out + ["", "gpumem's runs, case by case:", ""] + details)


def checked(doc, key):
    """A check's runs in words: "5/5 fit", "3/5 fit: **FAILS**", with the
    runs that ended otherwise (failed, timeout) and those not run said."""
    if not doc:
        return "-"
    verdicts = doc.get(key) or []
    ran = [v for v in verdicts if v not in ("not-run", "killed")]
    if not verdicts:
        return "-"
    if not ran:
        return "not run (%d planned)" % len(verdicts)
    text = "%d/%d fit" % (ran.count("fits"), len(ran))
    if "oom" in ran and key == "verdicts":
        text += ": **FAILS**"
    other = [v for v in ran if v not in ("fits", "oom")]
    if other:
        text += ", %s" % ", ".join("%d %s" % (other.count(v), v) for v in sorted(set(other)))
    if len(ran) < len(verdicts):
        text += " (%d not run)" % (len(verdicts) - len(ran))
    return text


def answer_words(mb):
    """gpumem's status text, shortened: its answer less the words every answer starts with."""
    text = str(mb.get("answer") or "")
    if text.startswith(("largest ", "longest ")) and " that fits in " in text and ": " in text:
        text = text.split(": ", 1)[1]
    text = text.replace("|", "/")
    return text if len(text) <= 90 else text[:87] + "..."


def batches_of(mb):
    """gpumem's runs a batch (max_batch.batches: batch, alloc_conf, runs, ran, out_of_memory), where it says them."""
    return [b for b in (mb.get("batches") or []) if isinstance(b, dict)]


def varied_batches(mb):
    """The batches whose runs disagreed: max_batch.varies, else those of
    max_batch.batches that both ran and ran out of memory."""
    if isinstance(mb.get("varies"), list):
        return mb["varies"]
    return [b.get("batch") for b in batches_of(mb) if is_int(b.get("ran")) and is_int(b.get("out_of_memory"))
            and b["ran"] > 0 and b["out_of_memory"] > 0]


def truth_of(cases, name):
    c = cases.get(name) or {}
    runs = {}
    for t in (c.get("trials") or []) + (c.get("below") or []):
        runs[t.get("batch")] = t.get("verdict")
    return c.get("truth"), runs, c


def verify_table(work, truth_work=None):
    cases = latest_by_case(read_jsonl(os.path.join(work, "cases.jsonl")))
    if truth_work:
        for k, v in latest_by_case(read_jsonl(os.path.join(truth_work, "cases.jsonl"))).items():
            cases.setdefault(k, v)
    answers = latest_by_case(read_jsonl(os.path.join(work, "gpumem.jsonl")))
    checks = {}
    for doc in read_jsonl(os.path.join(work, "verify.jsonl")):
        checks[(doc.get("case"), doc.get("who"))] = doc
    lightning = latest_by_case(read_jsonl(os.path.join(work, "lightning.jsonl")))
    knobs = any_knob(answers.values(), cases.values())
    out = [row(with_knob("knob", ["case", "gpumem", "gpumem says", "answer run again", "next" if knobs else "next batch", "true largest",
                                  "gpumem vs truth", "gpumem runs", "at once", "repeats", "gpumem s", "varied"], None, 1, knobs)),
           row(with_knob("---", ["---", "---:", "---", "---", "---", "---:", "---", "---:", "---:", "---:", "---:", "---"], None, 1, knobs))]
    answered, failing, unchecked, walls, runs, verdicts = [], [], [], [], [], []
    for name in sorted(answers, key=lambda n: (n.split("@")[0], cap_key(n.split("@")[-1].split(":")[0]), n)):
        a = answers[name]
        mb = a.get("max_batch") if isinstance(a.get("max_batch"), dict) else {}
        g = mb.get("largest_batch") if is_int(mb.get("largest_batch")) else None
        recs, _ = gpumem_runs(mb)
        nruns = len(recs) or sum(b.get("runs") for b in batches_of(mb) if is_int(b.get("runs")))
        check = checks.get((name, "gpumem"))
        truth, truth_runs, c = truth_of(cases, name)
        verdicts_run = [v for v in (check or {}).get("verdicts", []) if v not in ("not-run", "killed")]
        all_fit = bool(verdicts_run) and all(v == "fits" for v in verdicts_run)
        v = verdict_of(g, truth, all_fit, truth_runs, step_of(a))
        says = answer_words(mb)
        if not says:
            says = a.get("note") or ("gpumem exit %s" % a.get("exit") if a.get("exit") not in (0, None) else "")
            if a.get("stderr_tail"):
                says = (says + ": " if says else "") + a["stderr_tail"].strip().splitlines()[-1][:80].replace("|", "/")
        if g is not None:
            answered.append(name)
            verdicts.append(v)
            runs.append(nruns)
            if isinstance(a.get("wall"), (int, float)):
                walls.append(a["wall"])
            if "oom" in verdicts_run:
                failing.append(name)
            if not check or len(verdicts_run) < (check.get("planned") or 0):
                unchecked.append(name)
        varied = ", ".join(str(b) for b in varied_batches(mb)) or ("none" if isinstance(mb.get("varies"), list) else "-")
        jobs = mb.get("jobs")
        at_once = "%s (room for %s)" % (fmt(jobs), a.get("reserved_slots")) if is_int(jobs) and is_int(a.get("reserved_slots")) \
            and jobs > a["reserved_slots"] else fmt(jobs)
        nxt = checked(check, "next_verdicts")
        if knobs and check and is_int(check.get("next")) and nxt != "-":
            nxt = "%d: %s" % (check["next"], nxt)
        out.append(row(with_knob(None, [
            name, fmt(g), says, checked(check, "verdicts"), nxt, fmt(truth),
            v + (" (truth from an earlier run)" if c.get("truth_from") else ""), nruns, at_once,
            fmt(mb.get("repeats")), fmt(a.get("wall"), "%.1f"), varied], a, 1, knobs)))
    out.append("")
    if answers:
        out.append("%d answers of %d cases: %d exact, %d low, %d above the search at a batch that ran, %d WRONG-HIGH, %d without a truth; "
                   "answers that ran out of memory in any repeat: **%d** (must be 0)%s; answers not checked in full: %d%s; "
                   "median gpumem %s runs, %s s a case." % (
                       len(answered), len(answers), verdicts.count("exact"), len([x for x in verdicts if "low" in x]),
                       len([x for x in verdicts if x.startswith("above")]), len([x for x in verdicts if "WRONG" in x]),
                       verdicts.count("-"), len(failing), " (%s)" % ", ".join(failing) if failing else "", len(unchecked),
                       " (%s)" % ", ".join(unchecked) if unchecked else "", fmt(statistics.median(runs) if runs else None),
                       fmt(statistics.median(walls) if walls else None, "%.1f")))
    if lightning:
        out += ["", "Beside Lightning's BatchSizeFinder (binsearch), both started together; each answer checked alike:", "",
                "| cap | true largest | Lightning | its check | next | vs truth | Lightning s | gpumem | its check | next | vs truth | "
                "gpumem s | gpumem s / Lightning s |",
                "| --- | ---: | ---: | --- | --- | --- | ---: | ---: | --- | --- | --- | ---: | ---: |"]
        for l in sorted(lightning.values(), key=lambda l: cap_key(l.get("cap", ""))):
            name = "lightning_vit@%s" % l.get("cap")
            truth, truth_runs, _ = truth_of(cases, name)
            a = answers.get(name) or {}
            mb = a.get("max_batch") if isinstance(a.get("max_batch"), dict) else {}
            g = mb.get("largest_batch") if is_int(mb.get("largest_batch")) else None
            lcheck, gcheck = checks.get((name, "lightning")), checks.get((name, "gpumem"))
            fits = lambda chk: bool(chk) and all(v == "fits" for v in chk.get("verdicts", []))
            found = l.get("found") if is_int(l.get("found")) else None
            lw, gw = l.get("wall"), a.get("wall")
            ratio = "%.2f" % (gw / lw) if isinstance(lw, (int, float)) and isinstance(gw, (int, float)) and lw > 0 else "-"
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                l.get("cap"), fmt(truth), fmt(found), checked(lcheck, "verdicts"), checked(lcheck, "next_verdicts"),
                verdict_of(found, truth, fits(lcheck), truth_runs), fmt(lw, "%.1f"), fmt(g), checked(gcheck, "verdicts"),
                checked(gcheck, "next_verdicts"), verdict_of(g, truth, fits(gcheck), truth_runs), fmt(gw, "%.1f"), ratio))
    return "\n".join(out)


def main(argv):
    if len(argv) < 3 or argv[1] not in ("truth", "compare", "verify") or (argv[1] == "truth" and len(argv) != 3) or len(argv) > 4:
        sys.exit(__doc__)
    if argv[1] == "truth":
        print(truth_table(argv[2]))
    elif argv[1] == "verify":
        print(verify_table(argv[2], argv[3] if len(argv) == 4 else None))
    else:
        print(compare_table(argv[2], argv[3] if len(argv) == 4 else None))


if __name__ == "__main__":
    main(sys.argv)
