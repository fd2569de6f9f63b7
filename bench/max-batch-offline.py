#!/usr/bin/env python3
"""reuse-sim max-batch measured on a GPU's recordings, on a machine with no GPU.

Reads the folder bench/batch-recordings.sh makes (one folder a program:
bsB.pickle, bsB.stats.json, bsB.exit at many batches around its edge, and
cap.txt) and prints, for each program:
  - replay: each recording replayed through torch-caching under its cap
    (gpumem reuse-sim replay --trace), its OOM count and peak reserved against
    torch's own (the recording's statistics): the simulator's exactness;
  - truth: the largest batch recorded with every smaller one fitting (an
    OOM: exit status not 0, or num_ooms > 0), and whether the next ran
    out of memory;
  - answers: --max-batch --batch-trace from subsets of the recordings
    (4 and 8; 4, 8 and the recordings nearest 1/2 and 3/4 of the truth;
    those two alone), each against the truth.

  bench/max-batch-offline.py DIR [GPUMEM] [-- EXTRA --max-batch OPTIONS...]
"""
import glob
import json
import os
import re
import subprocess
import sys


def batches(folder):
    return sorted(int(re.search(r"bs(\d+)\.exit$", f).group(1)) for f in glob.glob(os.path.join(folder, "bs*.exit")))


def fits(folder, batch):
    stats = json.load(open(os.path.join(folder, "bs%d.stats.json" % batch)))
    ms = stats.get("memory_stats", stats)
    return open(os.path.join(folder, "bs%d.exit" % batch)).read().strip() == "0" and ms.get("num_ooms", 0) == 0


def gpumem_json(gpumem, args):
    r = subprocess.run([gpumem] + args, capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except ValueError:
        sys.exit("max-batch-offline: %s failed: %s" % (" ".join(args[:4]), r.stderr.strip()[-300:]))


def main(argv):
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if len(argv) < 2:
        sys.exit(__doc__)
    top = argv[1]
    gpumem = argv[2] if len(argv) > 2 else "build/gpumem"
    replayed = exact = 0
    for folder in sorted(d for d in glob.glob(os.path.join(top, "*")) if os.path.isdir(d)):
        name = os.path.basename(folder)
        cap = open(os.path.join(folder, "cap.txt")).read().strip()
        bs = batches(folder)
        misses = []
        for b in bs:
            doc = gpumem_json(gpumem, ["reuse-sim", "replay", "--trace", os.path.join(folder, "bs%d.pickle" % b), "--strategy", "torch-caching",
                                       "--capacity", cap, "--json"])
            s, rec = doc["strategies"][0], doc["recorded"]
            replayed += 1
            if s["ooms"] == rec["ooms"] and s["peak_reserved"] == rec["peak_reserved_bytes"]:
                exact += 1
            else:
                misses.append("bs%d: %d OOMs / %d B replayed, %d / %d B recorded" % (b, s["ooms"], s["peak_reserved"], rec["ooms"],
                                                                                  rec["peak_reserved_bytes"]))
        truth = 0
        for b in bs:
            if not fits(folder, b):
                break
            truth = b
        bracketed = truth + 1 in bs and not fits(folder, truth + 1)
        print("%s (cap %s): truth %d%s; replays exact: %d of %d%s" % (name, cap, truth, "" if bracketed else " (the next batch not recorded)",
                                                                      len(bs) - len(misses), len(bs), ("; " + "; ".join(misses)) if misses else ""))

        def nearest(x):
            below = [b for b in bs if b <= x]
            return max(below) if below else min(bs)

        half, three_quarters = nearest(truth // 2), nearest(3 * truth // 4)
        for subset in [(4, 8), (4, 8, half, three_quarters), (half, three_quarters)]:
            subset = sorted(set(b for b in subset if b in bs))
            if len(subset) < 2:
                continue
            args = ["reuse-sim", "max-batch", "--capacity", cap, "--json"] + extra
            for b in subset:
                args += ["--batch-trace", "%d=%s" % (b, os.path.join(folder, "bs%d.pickle" % b))]
            m = gpumem_json(gpumem, args)["max_batch"]
            answer = m.get("largest_batch")
            verdict = "-" if answer is None else ("exact" if answer == truth else ("low by %d" % (truth - answer) if answer < truth else
                                                                                      "HIGH by %d" % (answer - truth)))
            print("  from %s: %s (%s)%s" % (",".join(map(str, subset)), answer, verdict,
                                            "" if m.get("model_holds") else ", hopeful %s" % m.get("largest_batch_hopeful")))
    print("replays exact (OOM count and peak reserved equal to torch's): %d of %d" % (exact, replayed))


if __name__ == "__main__":
    main(sys.argv)
