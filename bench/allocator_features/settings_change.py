"""Issue 44, allocator settings changed while the program runs: the same
pattern of requests (sizes from 1 to 300 MiB, some kept, some freed) in
three phases, with torch.cuda.memory._set_allocator_settings between them
after empty_cache(): PyTorch's defaults, then max_split_size_mb:64, then
max_split_size_mb:64 with roundup_power2_divisions:4 and
garbage_collection_threshold:0.7. About 3 GiB at the peak uncapped. Every
allocation that runs out of memory is caught and skipped; the count is
printed as caught_ooms=N, and each settings call as it is made. Nothing is
held across a change of settings: under a cap, blocks split under one
max_split_size and merged under another tripped PyTorch 2.11's own assert
(try_merge_blocks, "dst->is_split() && src->is_split()") or a CUDA error, so
every tensor is freed before empty_cache() and the change."""
import random

import torch

MiB = 1 << 20
caught = 0
SETTINGS = (None, "max_split_size_mb:64",
            "max_split_size_mb:64,roundup_power2_divisions:4,garbage_collection_threshold:0.7")


def phase(seed):
    global caught
    rng = random.Random(seed)
    live, kept = [], []
    for i in range(60):
        mib = rng.choice((1, 2, 3, 5, 9, 24, 40, 70, 110, 150, 220, 300))
        try:
            t = torch.empty(mib * MiB + rng.randrange(0, MiB), dtype=torch.uint8, device="cuda")
        except torch.OutOfMemoryError:
            caught += 1
            continue
        (kept if i % 7 == 0 else live).append(t)
        if len(live) > 12:  # the oldest freed: holes of many sizes
            del live[rng.randrange(0, len(live))]
    live.clear()
    return kept


# torch.cuda.memory._set_allocator_settings (the C++ call under it where a
# version has only that).
set_allocator_settings = getattr(torch.cuda.memory, "_set_allocator_settings", None) or \
    torch._C._cuda_cudaCachingAllocator_set_allocator_settings
torch.cuda.init()
held = []
for n, conf in enumerate(SETTINGS):
    if conf is not None:
        held.clear()  # nothing held across the change (see above)
        torch.cuda.empty_cache()
        set_allocator_settings(conf)
        print("settings_change: phase %d: _set_allocator_settings(%r)" % (n + 1, conf), flush=True)
    held += phase(n)
    held = held[-6:]  # some memory stays held to the end of the phase
held.clear()
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("settings_change: caught_ooms=%d peak_reserved=%d retries=%d num_ooms=%d device_allocs=%d" % (
    caught, s["reserved_bytes.all.peak"], s["num_alloc_retries"], s["num_ooms"], s["num_device_alloc"]))
