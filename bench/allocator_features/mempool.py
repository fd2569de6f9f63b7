"""Issue 44, a private torch.cuda.MemPool: part of the tensors made inside
`with torch.cuda.use_mem_pool(pool):`, the rest in the default pools, in
phases that free and reuse both, about 3.5 GiB at the peak uncapped. Every
allocation that runs out of memory is caught and skipped (under a cap the
program goes on, as a program that sheds work would); the count is printed
as caught_ooms=N. Then the pool's tensors and the pool itself are released
and the default pool grows again."""
import torch

MiB = 1 << 20
MemPool = getattr(torch.cuda, "MemPool", None) or torch.cuda.memory.MemPool
use_mem_pool = getattr(torch.cuda, "use_mem_pool", None) or torch.cuda.memory.use_mem_pool
caught = 0


def alloc(mib, keep):
    global caught
    try:
        keep.append(torch.empty(mib * MiB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        caught += 1


torch.manual_seed(0)
default_live = []
# Phase 1: the default pool, large and small blocks, half freed (cached).
for mib in (256, 96, 256, 3, 256, 40, 256, 1, 256, 7):
    alloc(mib, default_live)
del default_live[::2]
pool = MemPool()
pool_live = []
# Phase 2: the private pool: its own segments, sizes the default pool's
# cached blocks could have served (they must not be used).
with use_mem_pool(pool):
    for mib in (192, 192, 64, 2, 2, 192, 5, 192, 80, 1):
        alloc(mib, pool_live)
    del pool_live[1::3]
    for mib in (128, 4, 128):
        alloc(mib, pool_live)
# Phase 3: the default pool again, larger than its cache: under a cap the
# allocator frees cached blocks (which pools?) and retries.
for mib in (384, 384, 384, 384, 12):
    alloc(mib, default_live)
del default_live[:2]
# Phase 4: back in the pool while the default pool holds memory.
with use_mem_pool(pool):
    for mib in (256, 256, 3):
        alloc(mib, pool_live)
# Phase 5: the pool's tensors freed, the pool dropped, the cache emptied;
# the default pool grows into the room.
pool_live.clear()
del pool
torch.cuda.empty_cache()
for mib in (512, 512, 6, 512):
    alloc(mib, default_live)
default_live.clear()
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("mempool: caught_ooms=%d peak_reserved=%d retries=%d num_ooms=%d device_allocs=%d" % (
    caught, s["reserved_bytes.all.peak"], s["num_alloc_retries"], s["num_ooms"], s["num_device_alloc"]))
