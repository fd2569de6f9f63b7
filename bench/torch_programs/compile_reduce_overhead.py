"""Inference with torch.compile(mode="reduce-overhead") (CUDA graph trees) on
a tiny model defined here, over a few batch sizes (each a new graph).
Optional argument: number of iterations per batch size (default 20)."""
import sys
import torch
import torch.nn as nn

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(256, 1024)
        self.down = nn.Linear(1024, 256)
        self.norm = nn.LayerNorm(256)

    def forward(self, x):
        return self.norm(x + self.down(torch.relu(self.up(x))))


torch.manual_seed(0)
model = Tiny().cuda().eval()
compiled = torch.compile(model, mode="reduce-overhead")
checksum = 0.0
with torch.no_grad():
    for bs in (32, 64, 32):
        for _ in range(iters):
            out = compiled(torch.randn(bs, 256, device="cuda"))
            checksum += out.float().sum().item()
torch.cuda.synchronize()
print("compile_reduce_overhead: %d calls, checksum %.3f" % (3 * iters, checksum))
