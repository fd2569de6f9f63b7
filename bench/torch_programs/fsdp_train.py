"""Two ranks (torchrun --nproc-per-node 2) training a small transformer
sharded with FullyShardedDataParallel over NCCL: parameters gathered and
gradients reduce-scattered on FSDP's own streams, whose buffers are freed
across streams (issue 35, point 2). Optional argument: batch size (64)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
torch.manual_seed(0)
layer = lambda: nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
model = nn.Sequential(*[layer() for _ in range(6)], nn.Linear(512, 512)).cuda()
model = FSDP(model, auto_wrap_policy=lambda module, recurse, nonwrapped_numel: recurse or isinstance(module, nn.TransformerEncoderLayer))
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
skipped = 0
for step in range(6):
    try:
        x = torch.randn(batch * (step % 3 + 1), 128, 512, device="cuda")
        model(x).pow(2).mean().backward()
        opt.step()
    except torch.cuda.OutOfMemoryError:
        skipped += 1
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
dist.barrier()
if rank == 0:
    print(f"fsdp_train: 6 steps, {skipped} skipped for memory, peak {torch.cuda.max_memory_reserved() >> 20} MiB reserved")
dist.destroy_process_group()
