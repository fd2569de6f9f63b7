"""An FSDP2 (fully_shard) training program for torchrun whose ranks take
different batches (issue 47, point 4): rank r trains on --bs x the r-th of
--scales (default "1,2"). A GPT-like stack of 6 nn.TransformerEncoderLayers
(d_model 768, 12 heads, causal) with an embedding and a head over 16000
tokens, each layer and the whole model sharded, random token ids of 256 a
sequence, AdamW, --steps steps, NCCL, one GPU a rank. An OOM is not
caught: the rank exits 1 and torchrun stops the others.

    torchrun --standalone --nproc-per-node 2 fsdp_uneven.py --bs 8 [--steps 3] [--scales 1,2]"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.distributed.fsdp import fully_shard
except ImportError:  # torch before 2.6
    from torch.distributed._composable.fsdp import fully_shard

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
vocab, seq = 16000, 256
torch.manual_seed(0)


class Lm(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, 768)
        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True) for _ in range(6))
        self.head = nn.Linear(768, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1], device=ids.device)
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        return self.head(x)


model = Lm().cuda()
for layer in model.layers:
    fully_shard(layer)
fully_shard(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(a.steps):
    ids = torch.randint(0, vocab, (n, seq + 1), device="cuda")
    logits = model(ids[:, :-1])
    F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1)).backward()
    ids = logits = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("fsdp_uneven: rank %d of %d, batch %d (--bs %d), %d steps, peak allocated %d" % (
    rank, dist.get_world_size(), n, a.bs, a.steps, torch.cuda.max_memory_allocated()), flush=True)
dist.barrier()
dist.destroy_process_group()
