#!/usr/bin/env python3
"""A stand-in training program's recording at one batch, as a gpumem trace
(CSV v2), for bench/max-batch-speed.sh (issue 37): the same program at every
batch (one seed), so that two of its recordings make a --max-batch pair.

    bench/max-batch-gen.py BATCH EVENTS OUT [SEED [WORKSPACE_FROM]]

Weights (constant sizes, live throughout), then as many steps as EVENTS holds: a
forward pass allocating activations (4 * (per_sample * B + extra) bytes, as
PyTorch's snapshots record the bytes asked for), a backward pass freeing them
in reverse with gradient temporaries in between, and from batch 12 on a
workspace in each step (a library choosing another algorithm as the batch
grows: an extra request of the larger recording; WORKSPACE_FROM 0: never),
then a sync.
"""
import random
import sys


def main():
    batch, events, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    workspace_from = int(sys.argv[5]) if len(sys.argv) > 5 else 12
    rng = random.Random(seed)
    weights = [4 * int(2 ** rng.uniform(10, 24)) for _ in range(400)]
    layers = [(int(2 ** rng.uniform(8, 16)), rng.choice([0, 0, 0, 64, 4096])) for _ in range(1000)]
    temporaries = [4 * int(2 ** rng.uniform(8, 20)) for _ in range(200)]
    lines = ["# gpumem-trace v2", "action,id,size,stream,tag"]
    next_id = 0
    for w in weights:
        lines.append(f"alloc,{next_id},{w},0,")
        next_id += 1
    # The same number of steps at every batch: as many as EVENTS holds without workspaces.
    per_step = 2 * len(layers) + 2 * ((len(layers) + 4) // 5) + 1
    steps = max(1, (events - len(weights)) // per_step)
    for _ in range(steps):
        live = []
        for per_sample, extra in layers:
            lines.append(f"alloc,{next_id},{4 * (per_sample * batch + extra)},0,")
            live.append(next_id)
            next_id += 1
        if workspace_from and batch >= workspace_from:
            lines.append(f"alloc,{next_id},{64 << 20},0,")
            lines.append(f"free,{next_id},0,0,")
            next_id += 1
        for n, a in enumerate(reversed(live)):
            if n % 5 == 0:
                t = temporaries[(n // 5) % len(temporaries)]
                lines.append(f"alloc,{next_id},{t},0,")
                lines.append(f"free,{next_id},0,0,")
                next_id += 1
            lines.append(f"free,{a},0,0,")
        lines.append("sync,,,,")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
