"""A GRU language model (embedding 512, a 2-layer cuDNN GRU of 1024, a
vocabulary of 8000) trained on random token ids, 256 a sequence, --bs
sequences a batch, Adam, gradient clipping, --steps steps. An OOM is not
caught: exit status 1."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
vocab, seq = 8000, 256


class GruLm(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(vocab, 512)
        self.gru = nn.GRU(512, 1024, num_layers=2, batch_first=True)
        self.head = nn.Linear(1024, vocab)

    def forward(self, ids):
        out, _ = self.gru(self.embed(ids))
        return self.head(out)


model = GruLm().cuda().train()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(a.steps):
    ids = torch.randint(0, vocab, (a.bs, seq + 1), device="cuda")
    logits = model(ids[:, :-1])
    F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1)).backward()
    ids = logits = None
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("gru_lm: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
