"""A DDP training program for torchrun whose ranks take different batches
(issue 47, point 4): rank r trains on --bs x the r-th of --scales (default
"1,2": rank 1 takes twice rank 0's batch), so the tightest rank is not
rank 0. nn.TransformerEncoder (4 layers, d_model 512, 8 heads) on random
sequences of 256 tokens, AdamW, --steps steps, one GPU a rank
(LOCAL_RANK) over NCCL. Where fewer GPUs are visible than there are ranks
(one GPU lent), the ranks share them (rank r on GPU r mod the count) and
talk over gloo, as --backend gloo asks anyway: NCCL refuses two ranks on
one GPU, gloo reduces CUDA tensors through the host. An OOM is not caught:
the rank exits 1 and torchrun stops the others.

    torchrun --standalone --nproc-per-node 2 ddp_uneven.py --bs 16 [--steps 3] [--scales 1,2] [--backend nccl|gloo]"""
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
p.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
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
model = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), 4).cuda()
ddp = DDP(model, device_ids=[device])
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
for step in range(a.steps):
    x = torch.randn(n, 256, 512, device="cuda")
    ddp(x).square().mean().backward()
    x = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("ddp_uneven: rank %d of %d on GPU %d over %s, batch %d (--bs %d), %d steps, peak allocated %d" % (
    rank, dist.get_world_size(), device, backend, n, a.bs, a.steps, torch.cuda.max_memory_allocated()), flush=True)
dist.barrier()
dist.destroy_process_group()
