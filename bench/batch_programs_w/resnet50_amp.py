"""torchvision's ResNet-50 (random weights) in channels_last, trained with
autocast to bf16 on 3x224x224 random images, 1000 classes, SGD with
momentum, --bs images a batch, --steps steps. An OOM is not caught: exit
status 1."""
import argparse

import torch
import torch.nn.functional as F
import torchvision

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).cuda().to(memory_format=torch.channels_last).train()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(a.steps):
    x = torch.randn(a.bs, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (a.bs,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    x = y = loss = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("resnet50_amp: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
