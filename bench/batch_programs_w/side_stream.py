"""A residual MLP (3 blocks of LayerNorm, 1024 -> 4096 -> 1024, GELU)
trained on random sequences of 256 tokens of 1024 features, --bs sequences
a batch, AdamW, --steps steps, whose input is made on a side stream: each
step, while the main stream computes, the side stream makes the next
batch (a raw tensor, then its normalised copy; the raw one freed on the
side stream). The main stream waits for the side stream (wait_stream)
before it takes a batch, marks it as used there (record_stream), and drops
it as soon as the backward pass is queued: its block goes back to the side
stream's pool only when the event recorded on the main stream completes,
so what the next batch's allocation can reuse depends on how far the GPU
got (issue 54: frees recorded on another stream). An OOM is not caught:
exit status 1."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
seq, width, hidden = 256, 1024, 4096


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


model = nn.Sequential(*(Block() for _ in range(3)), nn.Linear(width, 16)).cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
main = torch.cuda.current_stream()
side = torch.cuda.Stream()


def next_batch():
    """The next batch, made on the side stream (the caller waits for it)."""
    with torch.cuda.stream(side):
        raw = torch.randn(a.bs, seq, width, device="cuda")
        x = (raw - raw.mean(dim=-1, keepdim=True)) * 0.5
        raw = None  # freed on its own stream: reusable there at once
        y = torch.randint(0, 16, (a.bs,), device="cuda")
    return x, y


coming = next_batch()
for step in range(a.steps):
    main.wait_stream(side)
    x, y = coming
    x.record_stream(main)  # allocated on the side stream, used on this one
    y.record_stream(main)
    coming = next_batch() if step + 1 < a.steps else None  # overlaps this step's compute
    F.cross_entropy(model(x).mean(dim=1), y).backward()
    x = y = None  # freed while the main stream may still be using them
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("side_stream: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
