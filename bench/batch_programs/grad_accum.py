"""torchvision's ResNet-18 (random weights) trained with gradient
accumulation: --bs images of 3x128x128 a micro-batch, 4 micro-batches an
optimizer step, SGD with momentum, --steps optimizer steps. An OOM is not
caught: exit status 1."""
import argparse

import torch
import torch.nn.functional as F
import torchvision

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
p.add_argument("--accum", type=int, default=4)
a = p.parse_args()
torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=100).cuda().train()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(a.steps):
    for micro in range(a.accum):
        x = torch.randn(a.bs, 3, 128, 128, device="cuda")
        y = torch.randint(0, 100, (a.bs,), device="cuda")
        (F.cross_entropy(model(x), y) / a.accum).backward()
        x = y = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("grad_accum: micro-batch %d x %d, %d steps, peak allocated %d" % (a.bs, a.accum, a.steps, torch.cuda.max_memory_allocated()))
