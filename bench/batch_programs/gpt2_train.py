"""A transformers GPT-2 (6 layers, d 512, built from its config: random
weights, no download) trained as a language model on random token ids, 256
a sequence, --bs sequences a batch, AdamW, --steps steps. An OOM is not
caught: exit status 1."""
import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
config = GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=512)
model = GPT2LMHeadModel(config).cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(a.steps):
    ids = torch.randint(0, config.vocab_size, (a.bs, 256), device="cuda")
    model(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("gpt2_train: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
