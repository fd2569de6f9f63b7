"""A training step whose batch is halved after an OOM until it fits, then
kept: the program changes course after an OOM (a granted request would
have kept the whole batch). Run under --capacity 1GiB."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2048, 8192), nn.GELU(), nn.Linear(8192, 2048)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batch, ooms = 16384, 0
for step in range(6):
    while True:
        try:
            x = torch.randn(batch, 2048, device="cuda")
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            break
        except torch.OutOfMemoryError:
            ooms += 1
            x = None
            opt.zero_grad(set_to_none=True)
            batch //= 2
print("batch", batch, "after", ooms, "OOMs")
