"""Issue 54's DDP program, for torchrun: an MLP (4096-8192-4096, AdamW)
whose rank r trains on --bs x the r-th of --scales (default "1,2": rank 1
takes twice rank 0's batch), one GPU a rank over NCCL (--backend gloo, or
fewer GPUs than ranks: gloo, the ranks sharing the GPUs). On 2 H200s under
4 GiB a rank, 8672 ran 2 of 3 times under PyTorch's own cap: the same
batch fits or not from run to run. Under one rank (--nproc-per-node 1, the
one-GPU kind) NCCL still runs each bucket's all-reduce on its own stream:
what is left of that variance without a peer. An OOM is not caught: the
rank exits 1 and torchrun stops the others.

--sync: torch.cuda.synchronize() after each step (no stream still at work
when the next step allocates); --settle S: also sleep S seconds there
(NCCL's watchdog thread, which holds each collective's work until it sees
it complete, has polled by then). bench/ddp-variance.sh compares them.

    torchrun --standalone --nproc-per-node 2 ddp_mlp.py --bs 8000 [--steps 3] [--scales 1,2] [--backend nccl|gloo]
                                                      [--sync] [--settle S]"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--scales", default="1,2")
p.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
p.add_argument("--sync", action="store_true")
p.add_argument("--settle", type=float, default=0.0)
a = p.parse_args()
world = int(os.environ.get("WORLD_SIZE", "1"))
device = int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()
torch.cuda.set_device(device)
backend = "gloo" if world > torch.cuda.device_count() else a.backend
if backend == "nccl":
    dist.init_process_group("nccl", device_id=torch.device("cuda", device))
else:
    dist.init_process_group("gloo")
rank = dist.get_rank()
scales = [int(s) for s in a.scales.split(",")]
n = a.bs * scales[rank % len(scales)]
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4096, 8192), nn.ReLU(), nn.Linear(8192, 4096)).cuda()
ddp = DDP(model, device_ids=[device])
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
for step in range(a.steps):
    x = torch.randn(n, 4096, device="cuda")
    ddp(x).square().mean().backward()
    x = None
    opt.step()
    opt.zero_grad(set_to_none=True)
    if a.sync or a.settle:
        torch.cuda.synchronize()
        time.sleep(a.settle)
    stats = torch.cuda.memory_stats()
    print("step %d: allocated %d reserved %d inactive split %d" % (
        step, stats["allocated_bytes.all.current"], stats["reserved_bytes.all.current"], stats["inactive_split_bytes.all.current"]), flush=True)
torch.cuda.synchronize()
print("ddp_mlp: rank %d of %d on GPU %d over %s, batch %d (--bs %d), %d steps, peak reserved %d" % (
    rank, dist.get_world_size(), device, backend, n, a.bs, a.steps, torch.cuda.max_memory_reserved()), flush=True)
dist.barrier()
dist.destroy_process_group()
