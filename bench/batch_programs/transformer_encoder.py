"""nn.TransformerEncoder (6 layers, d_model 512, 8 heads) trained on
sequences of 512 tokens, --bs sequences a batch, AdamW, --steps steps. An
OOM is not caught: exit status 1."""
import argparse

import torch
import torch.nn as nn

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
model = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True), 6).cuda()
opt = torch.optim.AdamW(model.parameters())
for step in range(a.steps):
    x = torch.randn(a.bs, 512, 512, device="cuda")
    model(x).square().mean().backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("transformer_encoder: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
