"""A DDP training program for torchrun whose ranks take different batches
(issue 47, point 4): rank r trains on --bs x the r-th of --scales (default
"1,2": rank 1 takes twice rank 0's batch), so the tightest rank is not
rank 0. nn.TransformerEncoder (4 layers, d_model 512, 8 heads) on random
sequences of 256 tokens, AdamW, --steps steps, NCCL, one GPU a rank
(LOCAL_RANK). An OOM is not caught: the rank exits 1 and torchrun stops
the others.

    torchrun --standalone --nproc-per-node 2 ddp_uneven.py --bs 16 [--steps 3] [--scales 1,2]"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--scales", default="1,2")
a = p.parse_args()
local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl", device_id=torch.device("cuda", local))
rank = dist.get_rank()
scales = [int(s) for s in a.scales.split(",")]
n = a.bs * scales[rank % len(scales)]
torch.manual_seed(0)
model = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), 4).cuda()
ddp = DDP(model, device_ids=[local])
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
for step in range(a.steps):
    x = torch.randn(n, 256, 512, device="cuda")
    ddp(x).square().mean().backward()
    x = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("ddp_uneven: rank %d of %d, batch %d (--bs %d), %d steps, peak allocated %d" % (
    rank, dist.get_world_size(), n, a.bs, a.steps, torch.cuda.max_memory_allocated()), flush=True)
dist.barrier()
dist.destroy_process_group()
