#!/usr/bin/env python3
"""Record real PyTorch workloads as fidelity fixtures for `gpumem reuse-sim`.

    tools/record_torch_workloads.py OUTDIR [--only NAME[,NAME...]] [--device N]
                                           [--max-entries N] [--check GPUMEM_BIN]

Runs on a machine with a GPU and torch. Each workload runs in a FRESH Python
process (so the caching allocator starts empty and its statistics count from
zero), with the allocator's memory history switched on before the first CUDA
allocation and without stack context (small files). Each writes into OUTDIR:

  NAME.pickle      the snapshot (torch.cuda.memory._snapshot())
  NAME.stats.json  torch.cuda.memory_stats() at the end, torch.__version__,
                   the allocator settings, trace counts and the gpumem
                   reuse-sim options that replay the same configuration

The fixtures that tests/test_reuse_sim_fidelity.cpp reads are NAME.pickle
(gpumem reads snapshots itself) and NAME.stats.json. With --check, each trace is also replayed through
`GPUMEM_BIN reuse-sim replay --strategy torch-caching` and compared at once.

Workloads (a few thousand events each):
  cnn_inference      ResNet-18 (random weights) inference at varying batch sizes
  transformer_train  a small transformer encoder, 4 AdamW training steps
  dynamic_shapes     transformer inference over varying sequence lengths
  memory_fraction    varying large tensors under set_per_process_memory_fraction:
                     cudaMalloc refusals, free-cached-blocks-and-retry
  max_split          max_split_size_mb:64 and roundup_power2_divisions:4 with a
                     memory fraction: oversize blocks, release_available_cached_blocks
  oom_*              programs that catch torch.OutOfMemoryError and change course,
                     under a memory fraction calibrated on the workload itself
                     ("limit_of_peak": that share of the allocated peak of an
                     uncapped run, rounded up to MiB): a transformer trained on
                     variable sequence lengths that skips the batch (and calls
                     empty_cache) or shortens the sequence, one whose batch is
                     halved into micro-batches, a KV cache grown by torch.cat
                     whose sequence ends at the OOM. The reruns of
                     tools/tune_rerun.py keep the recorded fraction (--memory-fraction).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20

# Caps are allowed_memory_maximum (set_per_process_memory_fraction of the
# device total); "stress" workloads run _stress_loop with the spec's knobs.
# Each setting of PYTORCH_CUDA_ALLOC_CONF alone and in pairs, under caps that
# bite (retries and OOMs above zero where the name says so).
RL = "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"
WORKLOADS = {
    "cnn_inference": {},
    "transformer_train": {},
    "dynamic_shapes": {},
    "memory_fraction": {"limit_bytes": 1536 * MiB},
    "max_split": {"limit_bytes": 1024 * MiB,
                  "alloc_conf": "max_split_size_mb:64,roundup_power2_divisions:4"},
    # default settings, a cap, requests that do not fit: the OOM path and the program going on
    "oom_default": {"stress": {"seed": 1, "oom_every": 5}, "limit_bytes": 1024 * MiB},
    "max_split_oom": {"stress": {"seed": 2, "oom_every": 6}, "limit_bytes": 1024 * MiB,
                      "alloc_conf": "max_split_size_mb:64"},
    "roundup_scalar": {"stress": {"seed": 3, "oom_every": 7}, "limit_bytes": 1024 * MiB,
                       "alloc_conf": "roundup_power2_divisions:4"},
    "roundup_list": {"stress": {"seed": 4, "oom_every": 7}, "limit_bytes": 1024 * MiB, "alloc_conf": RL},
    "roundup_list_max_split": {"stress": {"seed": 5, "oom_every": 5}, "limit_bytes": 1024 * MiB,
                               "alloc_conf": RL + ",max_split_size_mb:128"},
    "expandable": {"stress": {"seed": 6, "oom_every": 6}, "limit_bytes": 1024 * MiB,
                   "alloc_conf": "expandable_segments:True"},
    "expandable_roundup": {"stress": {"seed": 7, "oom_every": 6}, "limit_bytes": 1024 * MiB,
                           "alloc_conf": "expandable_segments:True,roundup_power2_divisions:4"},
    "expandable_empty_cache": {"stress": {"seed": 8, "empty_cache_every": 4}, "limit_bytes": 1536 * MiB,
                               "alloc_conf": "expandable_segments:True"},
    "gc_threshold": {"stress": {"seed": 9, "oom_every": 8}, "limit_bytes": 1024 * MiB,
                     "alloc_conf": "garbage_collection_threshold:0.6"},
    "gc_max_split": {"stress": {"seed": 10, "oom_every": 6}, "limit_bytes": 1024 * MiB,
                     "alloc_conf": "garbage_collection_threshold:0.8,max_split_size_mb:128"},
    "gc_expandable": {"stress": {"seed": 11, "oom_every": 6}, "limit_bytes": 1024 * MiB,
                      "alloc_conf": "garbage_collection_threshold:0.7,expandable_segments:True"},
    "empty_cache": {"stress": {"seed": 12, "empty_cache_every": 3}, "limit_bytes": 1536 * MiB},
    "empty_cache_max_split": {"stress": {"seed": 13, "empty_cache_every": 4, "oom_every": 9},
                              "limit_bytes": 1024 * MiB, "alloc_conf": "max_split_size_mb:64"},
    "record_stream": {"stress": {"seed": 14, "streams": 2}},
    "record_stream_cap": {"stress": {"seed": 15, "streams": 2, "oom_every": 6}, "limit_bytes": 1024 * MiB},
    "record_stream_max_split": {"stress": {"seed": 16, "streams": 3, "oom_every": 7}, "limit_bytes": 1024 * MiB,
                                "alloc_conf": "max_split_size_mb:96"},
    # fragmentation alone: 600 MiB live, but every cached segment is split, so
    # a large request fails under the cap as recorded and fits with expandable
    # segments or max_split_size (the tuner's question)
    "fragmentation_oom": {"limit_bytes": 1024 * MiB},
    "record_stream_expandable": {"stress": {"seed": 17, "streams": 2, "oom_every": 7},
                                 "limit_bytes": 1024 * MiB, "alloc_conf": "expandable_segments:True"},
    # Programs that catch OOMs (the tuner's "which setting avoids my OOM" on
    # what a program does after one), each under two caps: a share of its own
    # uncapped allocated peak, so that the caps bite on any GPU.
    "oom_skip_batch": {"oom": {"fn": "varlen_train", "on_oom": "skip", "seed": 21}, "limit_of_peak": 0.9},
    "oom_skip_batch_loose": {"oom": {"fn": "varlen_train", "on_oom": "skip", "seed": 21}, "limit_of_peak": 1.02},
    "oom_shorten_seq": {"oom": {"fn": "varlen_train", "on_oom": "shorten", "seed": 22}, "limit_of_peak": 0.9},
    "oom_shorten_seq_loose": {"oom": {"fn": "varlen_train", "on_oom": "shorten", "seed": 22}, "limit_of_peak": 1.02},
    "oom_halve_batch": {"oom": {"fn": "batch_train", "on_oom": "halve", "seed": 23}, "limit_of_peak": 0.9},
    "oom_halve_batch_loose": {"oom": {"fn": "batch_train", "on_oom": "halve", "seed": 23}, "limit_of_peak": 1.02},
    "oom_end_sequence": {"oom": {"fn": "kv_generate", "on_oom": "end", "seed": 24}, "limit_of_peak": 0.9},
    "oom_end_sequence_loose": {"oom": {"fn": "kv_generate", "on_oom": "end", "seed": 24}, "limit_of_peak": 1.02},
}


# --------------------------------------------------------------------------
# Child side: runs one workload in this (fresh) process.
# --------------------------------------------------------------------------

def workload_cnn_inference(torch, device):
    try:
        import torchvision
        model = torchvision.models.resnet18(weights=None)
        model_name = "torchvision resnet18 (random weights)"
    except Exception:  # torchvision missing or incompatible: a similar plain CNN
        nn = torch.nn

        def block(cin, cout, stride):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())
        model = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                              nn.MaxPool2d(3, 2, 1), block(64, 64, 1), block(64, 128, 2), block(128, 256, 2),
                              block(256, 512, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000))
        model_name = "plain CNN (torchvision unavailable)"
    model = model.to(device).eval()
    with torch.no_grad():
        for batch in [1, 8, 3, 16, 8, 1, 32, 5, 16, 2, 8, 8]:
            x = torch.randn(batch, 3, 224, 224, device=device)
            y = model(x)
            _ = y.argmax(dim=1).cpu()
            del x, y
    return {"model": model_name}


def workload_transformer_train(torch, device):
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=3).to(device)
    head = nn.Linear(256, 1000).to(device)
    params = list(encoder.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(4):
        x = torch.randn(16, 128, 256, device=device)
        target = torch.randint(0, 1000, (16 * 128,), device=device)
        logits = head(encoder(x)).reshape(-1, 1000)
        loss = loss_fn(logits, target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _ = loss.item()
        del x, target, logits, loss
    return {"model": "TransformerEncoder d256 h4 ff1024 x3 + Linear(256,1000), AdamW, batch 16, seq 128"}


def workload_dynamic_shapes(torch, device):
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=2).to(device).eval()
    lengths = [17, 128, 64, 300, 33, 512, 7, 250, 129, 400, 64, 1000, 3, 777, 128, 96]
    with torch.no_grad():
        for n in lengths:
            x = torch.randn(4, n, 256, device=device)
            y = encoder(x)
            _ = y.sum().item()
            del x, y
    return {"model": "TransformerEncoder d256 h4 ff1024 x2, batch 4", "sequence_lengths": lengths}


def workload_fragmentation_oom(torch, device):
    ooms = 0
    for r in range(3):
        # tensors above 10 MiB get segments of their own; freed, each
        # cached segment is split by a smaller tensor, so none is whole and
        # none can be released when a large request needs room under the cap
        xs = [torch.empty((40 + r) * MiB, dtype=torch.uint8, device=device) for _ in range(20)]
        del xs
        ys = [torch.empty((30 - r) * MiB, dtype=torch.uint8, device=device) for _ in range(20)]
        try:
            _allocate_together(torch, device, (300 * MiB,))
        except torch.OutOfMemoryError:
            ooms += 1
        del ys
    return {"pattern": "3 rounds: 20 tensors of 40-42 MiB freed, 20 of 28-30 MiB splitting their cached segments, "
                       "then 300 MiB under a 1024 MiB cap", "caught_ooms": ooms}


def _sized_tensor_loop(torch, device, rng, rounds, live_budget, large_sizes):
    held_small = []
    for r in range(rounds):
        size = rng.choice(large_sizes) + rng.randrange(0, MiB)  # odd sizes: rounding matters
        count = max(1, live_budget // size)
        xs = [torch.empty(size, dtype=torch.uint8, device=device) for _ in range(count)]
        # a few small tensors as well: the small pool under the same limit
        held_small.append(torch.empty(rng.randrange(1, 900_000), dtype=torch.uint8, device=device))
        if len(held_small) > 8:
            held_small.pop(0)
        del xs
    del held_small


def workload_memory_fraction(torch, device):
    import random
    rng = random.Random(20261122)
    sizes = [24 * MiB, 40 * MiB, 96 * MiB, 30 * MiB, 130 * MiB, 60 * MiB, 200 * MiB, 22 * MiB, 150 * MiB, 80 * MiB]
    _sized_tensor_loop(torch, device, rng, rounds=40, live_budget=512 * MiB, large_sizes=sizes)
    return {"pattern": "40 rounds of N tensors of one odd size (22-200 MiB, <= 512 MiB live) + small tensors"}


def workload_max_split(torch, device):
    import random
    rng = random.Random(7)
    sizes = [12 * MiB, 33 * MiB, 50 * MiB, 70 * MiB, 90 * MiB, 140 * MiB, 63 * MiB, 65 * MiB, 18 * MiB]
    _sized_tensor_loop(torch, device, rng, rounds=40, live_budget=400 * MiB, large_sizes=sizes)
    return {"pattern": "40 rounds of N tensors of one odd size (12-140 MiB, <= 400 MiB live) + small tensors"}


def _allocate_together(torch, device, sizes):
    """Tensors of these sizes all alive at once, freed on return or raise."""
    return [torch.empty(n, dtype=torch.uint8, device=device) for n in sizes] and None


def _stress_loop(torch, device, spec):
    """Rounds of odd-sized tensors (small and large pools) on one or more
    streams; blocks used on a side stream are handed over with record_stream.
    Every oom_every-th round asks for more than the cap (an OOM the program
    catches and goes on after); every empty_cache_every-th round calls
    torch.cuda.empty_cache()."""
    import random
    rng = random.Random(spec["seed"])
    streams = [torch.cuda.current_stream(device)] + [torch.cuda.Stream(device) for _ in range(spec.get("streams", 1) - 1)]
    large = [12, 18, 22, 33, 40, 50, 63, 65, 70, 90, 130, 140, 200]
    held, ooms = [], 0
    for r in range(spec.get("rounds", 40)):
        stream = streams[r % len(streams)]
        size = rng.choice(large) * MiB + rng.randrange(0, MiB)
        with torch.cuda.stream(stream):
            try:  # fragmentation under a cap can refuse even these: an OOM the program goes on after
                xs = [torch.empty(size, dtype=torch.uint8, device=device) for _ in range(max(1, 400 * MiB // size))]
            except torch.OutOfMemoryError:
                xs, ooms = [], ooms + 1
            held.append(torch.empty(rng.randrange(1, 900_000), dtype=torch.uint8, device=device))
        if len(streams) > 1:
            # a tensor of the default stream used on another: freed only when that work is done
            side = streams[1 + r % (len(streams) - 1)]
            y = torch.empty(rng.randrange(1, 8 * MiB), dtype=torch.uint8, device=device)
            side.wait_stream(streams[0])
            with torch.cuda.stream(side):
                y.fill_(1)
            y.record_stream(side)
            del y
        if len(held) > 8:
            held.pop(0)
        del xs
        if spec.get("oom_every") and r % spec["oom_every"] == spec["oom_every"] - 1:
            sizes = (rng.randrange(700, 1400) * MiB, rng.randrange(300, 700) * MiB)
            try:
                _allocate_together(torch, device, sizes)
            except torch.OutOfMemoryError:
                ooms += 1  # the tensors that did fit died with _allocate_together's frame
        if spec.get("empty_cache_every") and r % spec["empty_cache_every"] == spec["empty_cache_every"] - 1:
            torch.cuda.empty_cache()
    del held
    return {"pattern": "stress loop " + json.dumps(spec, sort_keys=True), "caught_ooms": ooms}


def _small_lm(torch, device, d_model=256, layers=2, vocab=4096):
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=4, dim_feedforward=4 * d_model, batch_first=True,
                                       dropout=0.0)
    return nn.ModuleDict({"emb": nn.Embedding(vocab, d_model), "enc": nn.TransformerEncoder(layer, layers),
                          "head": nn.Linear(d_model, vocab)}).to(device)


def _lm_loss(torch, model, tokens):
    logits = model["head"](model["enc"](model["emb"](tokens[:, :-1])))
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def _oom_varlen_train(torch, device, spec):
    """A small language model trained on batches of variable sequence length
    (most short, a few long). On an OOM the program either skips the batch
    (zero_grad, empty_cache) or retries it with the sequence cut in half."""
    import random
    rng = random.Random(spec["seed"])
    vocab, batch = 4096, 8
    model = _small_lm(torch, device, vocab=vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = [rng.choice([rng.randrange(64, 400), rng.randrange(64, 400), rng.randrange(600, 1600)]) for _ in range(14)]
    ooms = skipped = shortened = 0
    for length in lengths:
        tokens = torch.randint(0, vocab, (batch, length + 1), device=device)
        while True:
            try:
                loss = _lm_loss(torch, model, tokens)
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                _ = loss.item()
                del loss
                break
            except torch.OutOfMemoryError:
                ooms += 1
                opt.zero_grad(set_to_none=True)
                if spec["on_oom"] == "skip":
                    skipped += 1
                    torch.cuda.empty_cache()
                    break
            # shorten: the frames of the failed step are gone here
            if tokens.shape[1] <= 33:
                skipped += 1
                break
            tokens = tokens[:, : tokens.shape[1] // 2 + 1].contiguous()
            shortened += 1
        del tokens
    return {"pattern": "LM d256 x2 vocab 4096, batch 8, 14 steps of variable length; on OOM: " + spec["on_oom"],
            "lengths": lengths, "caught_ooms": ooms, "skipped": skipped, "shortened": shortened}


def _oom_batch_train(torch, device, spec):
    """An MLP classifier trained on batches of varying size; on an OOM the
    batch is split into twice as many micro-batches (gradients accumulated)."""
    import random
    rng = random.Random(spec["seed"])
    nn = torch.nn
    model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(),
                          nn.Linear(4096, 1000)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sizes = [rng.choice([rng.randrange(256, 2048), rng.randrange(256, 2048), rng.randrange(4096, 12288)]) for _ in range(14)]
    ooms = halvings = 0
    for size in sizes:
        x = torch.randn(size, 1024, device=device)
        y = torch.randint(0, 1000, (size,), device=device)
        parts = 1
        while True:
            try:
                for xs, ys in zip(x.chunk(parts), y.chunk(parts)):
                    loss = nn.functional.cross_entropy(model(xs), ys) / parts
                    loss.backward()
                    del loss
                opt.step()
                opt.zero_grad(set_to_none=True)
                break
            except torch.OutOfMemoryError:
                ooms += 1
                opt.zero_grad(set_to_none=True)
            if parts >= 64:
                break
            parts *= 2
            halvings += 1
        del x, y
    return {"pattern": "MLP 1024-4096-4096-1000, 14 batches of 256-12288; on OOM: twice the micro-batches",
            "sizes": sizes, "caught_ooms": ooms, "halvings": halvings}


def _oom_kv_generate(torch, device, spec):
    """Decoding with a KV cache per layer grown by torch.cat, 8 tokens at a
    time, to a target length per sequence; on an OOM the sequence ends there
    (its cache freed) and the next begins."""
    import random
    rng = random.Random(spec["seed"])
    layers, batch, heads, dim, step = 3, 8, 16, 128, 8
    ooms = 0
    ended = []
    for _ in range(5):
        target = rng.randrange(256, 1536)
        tokens = step
        caches = [torch.randn(batch, 2 * heads, step, dim, device=device, dtype=torch.float16) for _ in range(layers)]
        try:
            while tokens < target:
                for i in range(layers):
                    new = torch.randn(batch, 2 * heads, step, dim, device=device, dtype=torch.float16)
                    caches[i] = torch.cat([caches[i], new], dim=2)
                    del new
                tokens += step
        except torch.OutOfMemoryError:
            ooms += 1
        ended.append((target, tokens))
        del caches
    return {"pattern": "KV cache of 3 layers (8 x 32 x T x 128 fp16) grown by torch.cat 8 tokens at a time; "
                       "on OOM: the sequence ends", "target_and_reached": ended, "caught_ooms": ooms}


def summarize_trace(trace):
    """Counts of the history's actions, for stats.json (gpumem reads the events)."""
    actions = {}
    live = {}
    skipped_frees = live_bytes = peak_live = 0
    for e in trace:
        action = e["action"]
        actions[action] = actions.get(action, 0) + 1
        if action == "alloc":
            live[e["addr"]] = e["size"]
            live_bytes += e["size"]
            peak_live = max(peak_live, live_bytes)
        elif action == "free_completed":
            if e["addr"] in live:
                live_bytes -= live.pop(e["addr"])
            else:
                skipped_frees += 1
    return {"events": len(trace), "actions": actions, "allocs": actions.get("alloc", 0),
            "frees": actions.get("free_completed", 0) - skipped_frees, "skipped_frees": skipped_frees,
            "live_at_end": len(live), "peak_live_bytes": peak_live,
            "streams": len({e["stream"] for e in trace if e["action"] == "alloc"}),
            "segment_alloc": actions.get("segment_alloc", 0), "segment_free": actions.get("segment_free", 0),
            "oom": actions.get("oom", 0)}


def run_child(name, outdir, device_index, max_entries, out_name=None, limit=None):
    import pickle
    import torch

    spec = WORKLOADS[name]
    device = torch.device("cuda", device_index)
    torch.manual_seed(0)
    # Before any CUDA allocation, so the trace holds every request the
    # caching allocator saw and its statistics describe the same requests.
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                             max_entries=max_entries)
    torch.cuda.set_device(device)
    allowed = None
    fraction = None
    total = torch.cuda.mem_get_info(device)[1]
    if limit is not None and limit.get("fraction"):
        fraction = limit["fraction"]
        torch.cuda.set_per_process_memory_fraction(fraction, device)
        allowed = int(fraction * float(total))
    elif limit is not None and limit.get("bytes"):
        fraction = limit["bytes"] / total
        torch.cuda.set_per_process_memory_fraction(fraction, device)
        allowed = int(fraction * float(total))
    elif limit is not None:
        pass  # uncapped: the calibration run of a "limit_of_peak" workload
    elif "limit_bytes" in spec:
        fraction = spec["limit_bytes"] / total
        torch.cuda.set_per_process_memory_fraction(fraction, device)
        # DeviceCachingAllocator::setMemoryFraction: size_t(fraction * double(total))
        allowed = int(fraction * float(total))
    if "stress" in spec:
        info = _stress_loop(torch, device, spec["stress"])
    elif "oom" in spec:
        info = globals()["_oom_" + spec["oom"]["fn"]](torch, device, spec["oom"])
    else:
        info = globals()["workload_" + name](torch, device)
    torch.cuda.synchronize(device)

    stats = torch.cuda.memory_stats(device)
    snapshot = torch.cuda.memory._snapshot()
    out_name = out_name or name
    with open(os.path.join(outdir, out_name + ".pickle"), "wb") as f:
        pickle.dump(snapshot, f)
    summary = summarize_trace(snapshot["device_traces"][device_index])
    summary["max_entries"] = max_entries
    summary["wrapped"] = summary["events"] >= max_entries

    alloc_conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
    replay = {"capacity": allowed, "max_split_size": None, "roundup_power2_divisions": None,
              "expandable_segments": False, "garbage_collection_threshold": None}
    if alloc_conf:
        # split on the commas outside [...] (the list form of roundup_power2_divisions)
        import re
        for item in re.split(r",(?![^\[]*\])", alloc_conf):
            key, _, value = item.partition(":")
            if key == "max_split_size_mb":
                replay["max_split_size"] = int(value) * MiB
            elif key == "roundup_power2_divisions":
                replay["roundup_power2_divisions"] = value
            elif key == "expandable_segments":
                replay["expandable_segments"] = value == "True"
            elif key == "garbage_collection_threshold":
                replay["garbage_collection_threshold"] = float(value)
    try:
        backend = torch.cuda.get_allocator_backend()
    except Exception:
        backend = None
    doc = {
        "schema_version": 1,
        "kind": "gpumem-torch-fixture",
        "workload": name,
        "fixture": out_name,
        "workload_info": info,
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda,
        "device_name": torch.cuda.get_device_name(device),
        "allocator": {
            "backend": backend,
            "PYTORCH_CUDA_ALLOC_CONF": alloc_conf,
            "memory_fraction": fraction,
            "memory_fraction_repr": repr(fraction) if fraction is not None else None,
            "allowed_memory_maximum": allowed,
            "device_total": total,
            "snapshot_allocator_settings": snapshot.get("allocator_settings") if isinstance(snapshot, dict) else None,
        },
        "reuse_sim": replay,
        "trace": summary,
        "memory_stats": {k: v for k, v in stats.items()},
    }
    with open(os.path.join(outdir, out_name + ".stats.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False, default=str)
        f.write("\n")
    return 0


# --------------------------------------------------------------------------
# Parent side: one fresh process per workload, then an optional replay check.
# --------------------------------------------------------------------------

def check_with_gpumem(gpumem, outdir, name):
    with open(os.path.join(outdir, name + ".stats.json")) as f:
        doc = json.load(f)
    args = [gpumem, "reuse-sim", "replay", "--trace", os.path.join(outdir, name + ".pickle"), "--strategy", "torch-caching",
            "--json"]
    replay = doc["reuse_sim"]
    # the allocator settings come from the snapshot itself; only the cap is not recorded there
    if replay.get("capacity"):
        args += ["--capacity", str(replay["capacity"])]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode not in (0, 7):
        return f"gpumem exited {out.returncode}: {out.stderr.strip()}"
    row = json.loads(out.stdout)["strategies"][0]
    stats = doc["memory_stats"]
    want = (stats["num_device_alloc"], stats["num_device_free"], stats["reserved_bytes.all.peak"],
            stats["num_alloc_retries"], stats["num_ooms"])
    got = (row["upstream_allocs"], row["upstream_frees"], row["peak_reserved"], row["retries"], row["ooms"])
    return "match" if want == got else f"MISMATCH torch {want} vs reuse-sim {got}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--only", help="comma list of workloads (default: all): " + ", ".join(WORKLOADS))
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--max-entries", type=int, default=2_000_000,
                        help="allocator history ring size; a wrapped ring makes the trace incomplete")
    parser.add_argument("--check", metavar="GPUMEM_BIN", help="replay each trace with this gpumem and compare")
    parser.add_argument("--alloc-conf", metavar="CONF",
                        help="PYTORCH_CUDA_ALLOC_CONF settings instead of the workload's own (the same cap): "
                             "the real rerun of a setting the tuner recommends")
    parser.add_argument("--as", dest="out_name", metavar="NAME",
                        help="write NAME.pickle and NAME.stats.json (one workload only)")
    parser.add_argument("--memory-fraction", type=float, metavar="F",
                        help="set_per_process_memory_fraction(F) instead of the workload's own cap (a rerun keeps the "
                             "recorded fraction, so that the capacity is the same to the byte)")
    parser.add_argument("--limit-bytes", type=int, metavar="N", help="the cap in bytes instead of the workload's own")
    parser.add_argument("--jobs", type=int, default=1, help="workloads recorded at once (fresh processes on one GPU)")
    parser.add_argument("--uncapped", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    if args.child:
        limit = None
        if args.memory_fraction or args.limit_bytes or args.uncapped:
            limit = {"fraction": args.memory_fraction, "bytes": args.limit_bytes}
        return run_child(args.child, args.outdir, args.device, args.max_entries, args.out_name, limit)

    names = list(WORKLOADS) if not args.only else args.only.split(",")
    for n in names:
        if n not in WORKLOADS:
            parser.error(f"unknown workload {n!r} (known: {', '.join(WORKLOADS)})")
    if args.out_name and len(names) != 1:
        parser.error("--as names the files of one workload: give --only NAME")
    def record(name):
        """One workload in fresh processes; returns (name, line, ok)."""
        env = dict(os.environ)
        env.pop("PYTORCH_NO_CUDA_MEMORY_CACHING", None)
        # The native caching allocator with cudaMalloc segments (what the
        # model replays), whatever the defaults of this torch build are, plus
        # the workload's own settings.
        own = WORKLOADS[name].get("alloc_conf", "") if args.alloc_conf is None else args.alloc_conf
        conf = "backend:native" + ("" if "expandable_segments" in own else ",expandable_segments:False")
        if own:
            conf += "," + own
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
        cmd = [sys.executable, os.path.abspath(__file__), args.outdir, "--child", name, "--device", str(args.device),
               "--max-entries", str(args.max_entries)]
        out_name = args.out_name or name
        if args.out_name:
            cmd += ["--as", args.out_name]
        if args.memory_fraction:
            cmd += ["--memory-fraction", repr(args.memory_fraction)]
        elif args.limit_bytes:
            cmd += ["--limit-bytes", str(args.limit_bytes)]
        elif "limit_of_peak" in WORKLOADS[name]:
            # The cap from the workload itself: a share of its allocated peak
            # without a cap (under the same settings), rounded up to MiB.
            import tempfile
            with tempfile.TemporaryDirectory(prefix="gpumem-calibrate-") as tmp:
                calibrate = [sys.executable, os.path.abspath(__file__), tmp, "--child", name, "--device",
                             str(args.device), "--max-entries", "1", "--uncapped"]
                rc = subprocess.run(calibrate, env=env).returncode
                if rc != 0:
                    return name, f"{name}: FAILED (calibration exit {rc})", False
                with open(os.path.join(tmp, name + ".stats.json")) as f:
                    peak = json.load(f)["memory_stats"]["allocated_bytes.all.peak"]
            limit = -(-int(WORKLOADS[name]["limit_of_peak"] * peak) // MiB) * MiB
            cmd += ["--limit-bytes", str(limit)]
        rc = subprocess.run(cmd, env=env).returncode
        if rc != 0:
            return out_name, f"{out_name}: FAILED (exit {rc})", False
        with open(os.path.join(args.outdir, out_name + ".stats.json")) as f:
            doc = json.load(f)
        s, t = doc["memory_stats"], doc["trace"]
        line = (f"{out_name}: {t['allocs']} allocs, {t['frees']} frees; torch {doc['torch_version']}: "
                f"num_device_alloc {s['num_device_alloc']}, num_device_free {s['num_device_free']}, "
                f"reserved peak {s['reserved_bytes.all.peak']}, retries {s.get('num_alloc_retries')}, "
                f"ooms {s.get('num_ooms')}")
        if t["wrapped"] or t["skipped_frees"]:
            line += "  WARNING: incomplete trace (wrapped ring or frees of unknown blocks)"
        ok = True
        if args.check:
            result = check_with_gpumem(args.check, args.outdir, out_name)
            line += "  replay: " + result
            ok = result == "match"
        return out_name, line, ok

    failed = 0
    if args.jobs > 1:
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(record, names))
    else:
        results = []
        for name in names:
            results.append(record(name))
            print(results[-1][1], flush=True)
    for _, line, ok in results:
        if args.jobs > 1:
            print(line)
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
