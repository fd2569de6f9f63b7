"""Two ranks (torchrun --nproc-per-node 2) training a small model with
DistributedDataParallel over NCCL, each on its own GPU."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn

rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda(),
                                            device_ids=[rank])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    model(torch.randn(256 * (rank + 1), 1024, device="cuda")).sum().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
dist.destroy_process_group()
