"""A CNN with batch norm (three conv-BN-ReLU stages) on 3x128x128 random
images, 10 classes, SGD with momentum, --bs images a batch, --steps steps.
An OOM is not caught: exit status 1."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)


def stage(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(), nn.MaxPool2d(2))


model = nn.Sequential(stage(3, 64), stage(64, 128), stage(128, 256), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(a.steps):
    x = torch.randn(a.bs, 3, 128, 128, device="cuda")
    y = torch.randint(0, 10, (a.bs,), device="cuda")
    F.cross_entropy(model(x), y).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("cnn_bn: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
