"""A feature cache on the GPU (an LRU dict of tensors of 2 to 6 MiB) grown
as items are asked for, with a large transient working buffer each step;
on an OOM the cache is shrunk by a quarter (least recently used first) and
the step redone. Bounded at 700 entries so an uncapped run stays small. The
program changes course after an OOM. The cap is gpumem's (--capacity): the
program uses the default device."""
import collections
import random
import time

import torch

start = time.time()
torch.manual_seed(0)
random.seed(0)
MiB = 1 << 20
cache = collections.OrderedDict()
weight = torch.randn(1024, 1024, device="cuda")
ooms = hits = evicted = 0
for step in range(1500):
    key = random.randrange(900) if step % 3 else step % 900
    for attempt in range(8):
        refused = False
        try:
            if key in cache:
                cache.move_to_end(key)
                hits += 1
            else:
                elems = ((2 + key % 5) * MiB) // 4
                cache[key] = torch.randn(elems, device="cuda")
                if len(cache) > 700:
                    cache.popitem(last=False)
            # The working set of the step: 16 to 64 MiB, then released.
            work = torch.empty((16 + (step % 4) * 16) * MiB // 4, device="cuda").view(-1, 1024)
            work.copy_(torch.randn_like(work)).matmul(weight).sum()
        except torch.cuda.OutOfMemoryError:
            refused = True
        work = None
        if not refused:
            break
        ooms += 1
        for _ in range(max(1, len(cache) // 4) if cache else 0):
            cache.popitem(last=False)
            evicted += 1
torch.cuda.synchronize()
print("converge-result: caught_ooms=%d; cache_grow_shrink: %d entries at the end, %d hits, %d evicted, %.1f s" % (
    ooms, len(cache), hits, evicted, time.time() - start))
