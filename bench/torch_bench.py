#!/usr/bin/env python3
"""The reading and the tables of bench/converge.sh (issue 36) and
bench/max-batch.sh (issue 37): what a recorded run said, which caps and
settings to try, and the markdown tables. Standard library only (the GPU
machine's python3); every gpumem JSON key read here is read defensively,
since --confirm's loop and --max-batch were being written when this was.

A run is the files one `gpumem reuse-sim record -o BASE.pickle ...` left:
BASE.stats.json (the hook's), BASE.out and BASE.err (the program's
streams), BASE.exit (its exit status) and BASE.wall (seconds), the last two
written by the scripts.

    torch_bench.py judge BASE                  one line: verdict exit num_ooms program_ooms caught peak_reserved
    torch_bench.py caps BASE [OVERRIDE]        the caps to try, largest first, one a line (converge.sh)
    torch_bench.py candidates TUNE_JSON N      settings to run by brute force, one a line, "(defaults)" for none
    torch_bench.py converge-table WORKDIR      the markdown of converge.sh
    torch_bench.py max-batch-answer JSON       gpumem's largest batch from a --max-batch document, or "-"
    torch_bench.py max-batch-table WORKDIR     the markdown of max-batch.sh
"""
import glob
import json
import os
import re
import sys

MiB = 1 << 20
DEFAULTS = "(defaults)"


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_text(path, default=""):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return default


def read_int(path):
    text = read_text(path).strip()
    return int(text) if re.fullmatch(r"-?\d+", text) else None


def read_float(path):
    try:
        return float(read_text(path).strip())
    except ValueError:
        return None


def run_figures(base):
    """What one recorded run said. `seen` is the OOMs the program saw: the
    hook's program_ooms where it counted them, else the program's own
    'caught_ooms=N' line, else torch's num_ooms (which also counts requests
    PyTorch refused and retried itself, cuDNN's workspaces)."""
    stats = load_json(base + ".stats.json") or {}
    mem = stats.get("memory_stats") or {}
    caught = re.findall(r"caught_ooms=(\d+)", read_text(base + ".out"))
    fig = {
        "exit": read_int(base + ".exit"),
        "wall": read_float(base + ".wall"),
        "stats": bool(stats),
        "num_ooms": mem.get("num_ooms"),
        "program_ooms": stats.get("program_ooms"),
        "caught": int(caught[-1]) if caught else None,
        "peak_reserved": mem.get("reserved_bytes.all.peak"),
        "peak_allocated": mem.get("allocated_bytes.all.peak"),
        "retries": mem.get("num_alloc_retries"),
    }
    for key in ("program_ooms", "caught", "num_ooms"):
        if isinstance(fig[key], int):
            fig["seen"], fig["seen_from"] = fig[key], key
            break
    else:
        fig["seen"], fig["seen_from"] = None, None
    if fig["exit"] is None and not stats:
        fig["verdict"] = "not-run"
    elif fig["exit"] == 124 or fig["exit"] == 137:
        fig["verdict"] = "timeout"
    elif fig["exit"] != 0:
        fig["verdict"] = "failed"
    elif fig["seen"] is None:
        fig["verdict"] = "no-stats"
    elif fig["seen"] > 0:
        fig["verdict"] = "oom"
    else:
        fig["verdict"] = "ok"
    return fig


def cmd_judge(base):
    f = run_figures(base)
    print(f["verdict"], f["exit"], f["num_ooms"], f["program_ooms"], f["caught"], f["peak_reserved"])


def mib_text(n):
    return "%dMiB" % max(1, n // MiB)


def cmd_caps(base, override=""):
    """The caps to record under, largest first: where peak reserved is well
    above peak allocated, their midpoint (a cap a better setting may fit
    under while PyTorch's defaults run out); then fractions of peak
    allocated, under which the program must change course."""
    if override:
        for cap in override.split("/"):
            print(cap)
        return
    f = run_figures(base)
    alloc, reserved = f["peak_allocated"], f["peak_reserved"]
    if not alloc or not reserved:
        return
    caps = []
    if reserved > alloc * 1.03:
        caps.append((alloc + reserved) // 2)
    caps += [alloc, alloc * 9 // 10, alloc * 3 // 4, alloc // 2]
    seen = set()
    for cap in caps:
        text = mib_text(cap)
        if text not in seen:
            seen.add(text)
            print(text)


def outcome_key(row):
    return tuple(row.get(k) for k in ("peak_reserved", "ooms", "first_oom_event", "retries", "upstream_allocs", "upstream_frees",
                                      "granted_recorded_ooms"))


def tune_rows(doc):
    rows = (doc or {}).get("settings")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def cmd_candidates(path, n):
    """The N best settings of --tune, one of each predicted outcome first
    (settings predicted alike may still differ for real, but more outcomes
    cover more of the grid), the rest by rank; plus PyTorch's defaults."""
    rows = tune_rows(load_json(path))
    rows.sort(key=lambda r: r.get("rank", 0))
    chosen, outcomes = [], set()
    for r in rows:
        if len(chosen) < n and outcome_key(r) not in outcomes:
            outcomes.add(outcome_key(r))
            chosen.append(r.get("alloc_conf") or "")
    for r in rows:
        conf = r.get("alloc_conf") or ""
        if len(chosen) < n and conf not in chosen:
            chosen.append(conf)
    if "" not in chosen:
        chosen.append("")
    for conf in chosen:
        print(conf or DEFAULTS)


def setting_text(conf):
    return "`%s`" % conf if conf else DEFAULTS


def confirm_runs(doc):
    c = (doc or {}).get("confirm")
    runs = c.get("runs") if isinstance(c, dict) else None
    return c if isinstance(c, dict) else {}, [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def run_seen(run):
    """The OOMs the program saw in a --confirm run: program_ooms where the
    loop gives it, else real_ooms (torch's num_ooms)."""
    for key in ("program_ooms", "real_program_ooms", "real_ooms"):
        if isinstance(run.get(key), int):
            return run[key], key
    return None, None


def confirm_final(doc):
    """--confirm's last word: (converged, setting) with converged True, False
    or None (unknown), from confirm.converged where there, else from the
    runs (the first run the program saw no OOM in and that exited 0)."""
    c, runs = confirm_runs(doc)
    ok = [r for r in runs if run_seen(r)[0] == 0 and r.get("exit_status", 0) == 0]
    converged = c.get("converged")
    if isinstance(converged, dict):  # a record: its flag and setting, whichever keys it has
        setting = converged.get("setting", converged.get("alloc_conf"))
        flag = converged.get("converged", converged.get("value", setting is not None))
        return bool(flag), setting if setting is not None else (ok[0].get("setting") if ok else None)
    if isinstance(converged, bool):
        if not converged:
            return False, None
        setting = c.get("setting", c.get("final_setting"))
        return True, setting if setting is not None else (ok[-1].get("setting") if ok else None)
    if not runs:
        return None, None
    return (True, ok[0].get("setting")) if ok else (False, None)


def cmd_converge_table(work):
    out = []
    out.append("| program | cap | recorded: OOMs the program saw (num_ooms) | brute force: settings run (of the grid) | ran without an OOM | "
               "--confirm --max-runs 3: path | converged | agrees with brute force |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    details = []
    for d in sorted(glob.glob(os.path.join(work, "*", "program.txt"))):
        d = os.path.dirname(d)
        name = os.path.basename(d)
        cap = read_text(os.path.join(d, "cap.txt")).strip()
        note = read_text(os.path.join(d, "note.txt")).strip()
        if not cap:
            out.append("| %s | - | %s | | | | | |" % (name, note or "no capped recording with an OOM"))
            continue
        rec = run_figures(os.path.join(d, "recorded"))
        tune = load_json(os.path.join(d, "tune.json"))
        predicted = {(r.get("alloc_conf") or ""): r for r in tune_rows(tune)}
        brute = []
        for sfile in sorted(glob.glob(os.path.join(d, "bf*.setting")), key=lambda p: int(re.search(r"bf(\d+)", os.path.basename(p)).group(1))):
            base = sfile[:-len(".setting")]
            brute.append((base, read_text(sfile).rstrip("\n"), run_figures(base)))
        worked = [s for _, s, f in brute if f["verdict"] == "ok"]
        c, runs = confirm_runs(load_json(os.path.join(d, "confirm.json")))
        converged, final = confirm_final(load_json(os.path.join(d, "confirm.json")))
        path = []
        for r in runs:
            seen, key = run_seen(r)
            path.append("%s: pred %s, real %s%s, peak %s" % (
                setting_text(r.get("setting") or ""), r.get("predicted_ooms"), seen, " (%s)" % key if key != "real_ooms" else "",
                r.get("real_peak_reserved")))
        if not runs:
            path.append("no runs: " + (read_text(os.path.join(d, "confirm.err")).strip().splitlines() or ["(nothing)"])[-1][:200])
        tried = len([b for b in brute if b[2]["verdict"] != "not-run"])
        if converged is None:
            agree = "unknown (no --confirm result)"
        elif converged:
            if final in worked:
                agree = "yes"
            elif any(s == final for _, s, _ in brute):
                agree = "NO: brute force ran %s with an OOM" % setting_text(final or "")
            else:
                agree = "yes (its setting was not in the brute-force set; its own real run had no OOM)"
        else:
            agree = "yes (neither found one)" if not worked else "NO: brute force found %d" % len(worked)
        grid = ((tune or {}).get("tune") or {}).get("grid_points")
        if note:
            agree += " (" + note.replace("\n", "; ") + ")"
        out.append("| %s | %s | %s (%s) | %d of %s | %s | %s | %s | %s |" % (
            name, cap, rec["seen"], rec["num_ooms"], tried, grid if grid is not None else "?",
            ", ".join(setting_text(s) for s in worked) or "none", "<br>".join(path), {True: "yes", False: "no", None: "?"}[converged],
            agree))
        details.append("\n### %s (cap %s)\n" % (name, cap))
        if note:
            details.append(note + "\n")
        details.append("Recorded under the cap: exit %s, OOMs the program saw %s (by %s), num_ooms %s, peak reserved %s.\n" % (
            rec["exit"], rec["seen"], rec["seen_from"], rec["num_ooms"], rec["peak_reserved"]))
        if c.get("answer"):
            details.append("--confirm's answer: " + str(c.get("answer")).replace("\n", " ") + "\n")
        details.append("| # | setting | predicted OOMs | predicted peak | verdict | OOMs seen (by) | num_ooms | peak reserved | exit | wall s |")
        details.append("| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
        for i, (base, s, f) in enumerate(brute, 1):
            p = predicted.get(s, {})
            details.append("| %d | %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s |" % (
                i, setting_text(s), p.get("ooms", "-"), p.get("peak_reserved", "-"), f["verdict"], f["seen"], f["seen_from"],
                f["num_ooms"], f["peak_reserved"], f["exit"], "%.1f" % f["wall"] if f["wall"] is not None else "-"))
    print("\n".join(out + [""] + details))


# ------------------------------------------------------------ --max-batch

BATCH_KEYS = ("largest_batch", "largest", "max_batch", "answer_batch", "batch")


def first_int(d, keys):
    for k in keys:
        v = d.get(k)
        if isinstance(v, int) and not isinstance(v, bool):
            return v, k
        if isinstance(v, dict):  # {"largest": {"batch": 61, ...}}
            inner = first_int(v, ("batch", "value", "largest"))
            if inner[0] is not None:
                return inner[0], k + "." + inner[1]
    return None, None


def is_default_row(row):
    conf = row.get("alloc_conf", row.get("setting"))
    return row.get("recorded") is True or row.get("baseline") is True or conf in ("", None, DEFAULTS)


def max_batch_answer(doc):
    """gpumem's largest batch under PyTorch's defaults (the real runs' setting),
    and where in the document it was found. Looks, in order, at a record
    named max_batch (or batch), its per-setting rows (the default's), then
    the document's top level, then anywhere a key says largest."""
    if not isinstance(doc, dict):
        return None, "no JSON document"
    for name in ("max_batch", "batch", "max_batch_search"):
        rec = doc.get(name)
        if isinstance(rec, dict):
            for key in ("default", "defaults", "recorded", "baseline"):
                if isinstance(rec.get(key), dict):
                    v, k = first_int(rec[key], BATCH_KEYS)
                    if v is not None:
                        return v, "%s.%s.%s" % (name, key, k)
            v, k = first_int(rec, BATCH_KEYS)
            if v is not None:
                return v, name + "." + k
            for rows_key in ("settings", "rows", "per_setting"):
                rows = rec.get(rows_key)
                if isinstance(rows, list):
                    for row in rows:
                        if isinstance(row, dict) and is_default_row(row):
                            v, k = first_int(row, BATCH_KEYS)
                            if v is not None:
                                return v, "%s.%s[default].%s" % (name, rows_key, k)
    v, k = first_int(doc, BATCH_KEYS)
    if v is not None:
        return v, k
    rows = doc.get("settings")
    if isinstance(rows, list):
        for row in rows:
            if isinstance(row, dict) and is_default_row(row):
                v, k = first_int(row, BATCH_KEYS)
                if v is not None:
                    return v, "settings[default]." + k

    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                if "largest" in key and "request" not in key and isinstance(value, int) and not isinstance(value, bool):
                    found.append((value, path + key))
                walk(value, path + key + ".")
        elif isinstance(node, list) and node:
            walk(node[0], path + "[0].")

    walk(doc, "")
    return found[0] if found else (None, "no largest batch found")


def cmd_max_batch_answer(path):
    v, where = max_batch_answer(load_json(path))
    print(v if v is not None else "-", where)


def cmd_max_batch_table(work):
    out = ["| program | cap | gpumem (end to end) | with --confirm | from two recordings | true largest batch | "
           "gpumem vs truth | gpumem s / runs | --confirm s | search s / runs | notes |",
           "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | ---: | --- | --- |"]
    details = []
    for f in sorted(glob.glob(os.path.join(work, "*", "program.txt"))):
        d = os.path.dirname(f)
        name = os.path.basename(d)
        cap = read_text(os.path.join(d, "cap.txt")).strip()
        res = load_json(os.path.join(d, "search.json")) or {}
        truth = res.get("largest")
        answers = {}
        for kind in ("e2e", "e2e_confirm", "fallback"):
            v, where = max_batch_answer(load_json(os.path.join(d, kind + ".json")))
            answers[kind] = (v, where, read_float(os.path.join(d, kind + ".wall")), read_int(os.path.join(d, kind + ".exit")))
        g = answers["e2e"][0] if answers["e2e"][0] is not None else answers["fallback"][0]
        doc = load_json(os.path.join(d, "e2e.json")) or {}
        mb = doc.get("max_batch") if isinstance(doc.get("max_batch"), dict) else doc
        recordings = mb.get("recordings") if isinstance(mb.get("recordings"), list) else None
        # A real run of gpumem's at its answer (a check) that ran without an OOM.
        answer_ran = answers["e2e"][0] is not None and any(
            r.get("batch") == g and not r.get("ran_out_of_memory") for r in recordings or [])
        if g is None or truth is None:
            verdict = "-"
        elif g == truth:
            verdict = "exact"
        elif g > truth and answer_ran:
            # The search bisects on the first OOM it meets: above it, the
            # memory a batch needs is not monotone (a larger batch ran).
            verdict = "above the search's (+%d), but a real run at it fitted: not monotone" % (g - truth)
        elif g > truth:
            verdict = "WRONG-HIGH (+%d)" % (g - truth)
        elif truth - g <= res.get("step", 1):
            verdict = "one step off (low)"
        else:
            verdict = "low by %d" % (truth - g)
        notes = []
        if res.get("runs_with_torch_ooms_exit_0"):
            notes.append("exit 0 but num_ooms > 0 at batch %s (largest by exit status alone: %s)" % (
                res["runs_with_torch_ooms_exit_0"], res.get("largest_by_exit_status")))
        note = read_text(os.path.join(d, "note.txt")).strip()
        if note:
            notes.append(note.replace("\n", "; "))
        if res.get("capped"):
            notes.append("truth >= %s (search limit)" % res.get("limit"))
        if res.get("incomplete"):
            notes.append("search incomplete: " + str(res.get("incomplete")))
        for kind, (v, where, _, rc) in answers.items():
            if rc not in (None, 0):
                notes.append("%s exit %s" % (kind, rc))
        # The end-to-end form records two runs unless its document says otherwise.
        runs_e2e = len(recordings) if recordings else (2 if doc else "-")

        def wall(x):
            return "%.1f" % x if x is not None else "-"

        out.append("| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s / %s | %s |" % (
            name, cap, answers["e2e"][0] if answers["e2e"][0] is not None else "-",
            answers["e2e_confirm"][0] if answers["e2e_confirm"][0] is not None else "-",
            answers["fallback"][0] if answers["fallback"][0] is not None else "-",
            truth if truth is not None else "-", verdict, wall(answers["e2e"][2]), runs_e2e, wall(answers["e2e_confirm"][2]),
            wall(res.get("wall")), res.get("runs", "-"), "; ".join(notes)))
        details.append("\n### %s (cap %s)\n" % (name, cap))
        for kind, (v, where, w, rc) in answers.items():
            details.append("- %s: %s (from %s), exit %s, %s s" % (kind, v, where, rc, wall(w)))
        if recordings:
            details.append("- gpumem's runs, in order (batch: why, OOMs): " + ", ".join(
                "%s: %s, %s" % (r.get("batch"), r.get("why"), r.get("ooms"))
                for r in sorted(recordings, key=lambda r: r.get("order") or 0)))
        confirm = (load_json(os.path.join(d, "e2e_confirm.json")) or {}).get("confirm")
        if isinstance(confirm, dict):
            details.append("- --confirm: " + json.dumps({k: v for k, v in confirm.items() if not isinstance(v, (list, dict))})[:600])
        details.append("- real runs of the search (batch: verdict, num_ooms, exit, wall s): " + ", ".join(
            "%s: %s" % (r.get("batch"), "/".join(str(r.get(k)) for k in ("verdict", "num_ooms", "exit", "wall"))) for r in res.get("trials", [])))
    print("\n".join(out + [""] + details))


def cmd_search_result(work_dir, step, limit):
    """search.json from the search's trials (trial-B.* files), as the script ran them."""
    trials = []
    for base in glob.glob(os.path.join(work_dir, "trial-*.exit")):
        base = base[:-len(".exit")]
        batch = int(re.search(r"trial-(\d+)$", base).group(1))
        f = run_figures(base)
        # Issue 37's rule: an OOM is a run that exited non-zero or whose torch counted an OOM.
        verdict = "timeout" if f["verdict"] == "timeout" else (
            "oom" if (f["exit"] != 0 or (f["num_ooms"] or 0) > 0) else "fits")
        trials.append({"batch": batch, "verdict": verdict, "num_ooms": f["num_ooms"], "exit": f["exit"], "wall": f["wall"],
                       "order": os.path.getmtime(base + ".exit")})
    trials.sort(key=lambda t: t["order"])
    fits = [t["batch"] for t in trials if t["verdict"] == "fits"]
    ooms = [t["batch"] for t in trials if t["verdict"] != "fits"]
    largest = max(fits) if fits else (0 if ooms else None)
    res = {"largest": largest, "runs": len(trials), "wall": sum(t["wall"] or 0 for t in trials), "step": step, "limit": limit,
           "capped": bool(fits) and max(fits) >= limit, "trials": trials}
    # Where torch counted OOMs in runs that still exited 0 (PyTorch's own
    # retries, cuDNN's workspaces), the largest batch by exit status alone.
    failed = [t["batch"] for t in trials if t["exit"] != 0]
    exit0 = [t["batch"] for t in trials if t["exit"] == 0 and (not failed or t["batch"] < min(failed))]
    res["largest_by_exit_status"] = max(exit0) if exit0 else None
    res["runs_with_torch_ooms_exit_0"] = [t["batch"] for t in trials if t["exit"] == 0 and (t["num_ooms"] or 0) > 0]
    bad = [b for b in fits if any(o <= b for o in ooms)]
    if bad:
        res["incomplete"] = "not monotone: batch %s fitted above an OOM at %s" % (bad, sorted(ooms))
    print(json.dumps(res, indent=1))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    table = {
        "judge": lambda: cmd_judge(args[0]),
        "caps": lambda: cmd_caps(args[0], args[1] if len(args) > 1 else ""),
        "candidates": lambda: cmd_candidates(args[0], int(args[1])),
        "converge-table": lambda: cmd_converge_table(args[0]),
        "max-batch-answer": lambda: cmd_max_batch_answer(args[0]),
        "max-batch-table": lambda: cmd_max_batch_table(args[0]),
        "search-result": lambda: cmd_search_result(args[0], int(args[1]), int(args[2])),
    }
    if cmd not in table:
        sys.exit("unknown command %r\n%s" % (cmd, __doc__))
    table[cmd]()


if __name__ == "__main__":
    main(sys.argv)
