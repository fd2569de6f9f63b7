"""A U-Net (plain torch: 4 levels, 32 to 256 channels, conv-BN-ReLU pairs,
transposed convolutions up, skip connections concatenated) trained for
10-class segmentation of random 3x128x128 images, --bs images a batch,
Adam, --steps steps. An OOM is not caught: exit status 1."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, classes=10, widths=(32, 64, 128, 256)):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for w in widths:
            self.down.append(block(cin, w))
            cin = w
        self.bottom = block(widths[-1], widths[-1] * 2)
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        cin = widths[-1] * 2
        for w in reversed(widths):
            self.up.append(nn.ConvTranspose2d(cin, w, 2, stride=2))
            self.merge.append(block(2 * w, w))
            cin = w
        self.out = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.out(x)


model = UNet().cuda().train()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(a.steps):
    x = torch.randn(a.bs, 3, 128, 128, device="cuda")
    y = torch.randint(0, 10, (a.bs, 128, 128), device="cuda")
    F.cross_entropy(model(x), y).backward()
    x = y = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("unet: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
