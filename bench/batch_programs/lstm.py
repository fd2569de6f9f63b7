"""A 2-layer LSTM (cuDNN's, 512 hidden) on sequences of 256 steps, a linear
head, Adam, --bs sequences a batch, --steps steps. An OOM is not caught:
exit status 1."""
import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
lstm = nn.LSTM(256, 512, num_layers=2, batch_first=True).cuda()
head = nn.Linear(512, 256).cuda()
opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()))
for step in range(a.steps):
    x = torch.randn(a.bs, 256, 256, device="cuda")
    out, _ = lstm(x)
    (head(out) - x).square().mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("lstm: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
