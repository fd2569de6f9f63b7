"""torchvision's Swin-T (random weights, no download) trained on 3x224x224
random images, 100 classes, AdamW, --bs images a batch, --steps steps
(shifted-window attention: masks and rolls a plain ViT does not have). An
OOM is not caught: exit status 1."""
import argparse

import torch
import torch.nn.functional as F
import torchvision

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
model = torchvision.models.swin_t(weights=None, num_classes=100).cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(a.steps):
    x = torch.randn(a.bs, 3, 224, 224, device="cuda")
    y = torch.randint(0, 100, (a.bs,), device="cuda")
    F.cross_entropy(model(x), y).backward()
    x = y = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("swin_t: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
