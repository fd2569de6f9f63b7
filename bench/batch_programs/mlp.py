"""An MLP applied to every token of (bs, 256, 1024) inputs, trained with
AdamW for --steps steps. An OOM is not caught: exit status 1."""
import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 4096), nn.GELU(), nn.Linear(4096, 1024)).cuda()
opt = torch.optim.AdamW(model.parameters())
for step in range(a.steps):
    x = torch.randn(a.bs, 256, 1024, device="cuda")
    (model(x) - x).square().mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("mlp: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
