"""A transformers BERT (4 layers, hidden 512, built from BertConfig: random
weights, no download) trained as a masked language model on random token
ids, 256 a sequence, 15 % of the tokens masked (the others' labels -100),
--bs sequences a batch, AdamW, --steps steps. An OOM is not caught: exit
status 1."""
import argparse

import torch
from transformers import BertConfig, BertForMaskedLM

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
config = BertConfig(num_hidden_layers=4, hidden_size=512, num_attention_heads=8, intermediate_size=2048,
                    max_position_embeddings=512)
model = BertForMaskedLM(config).cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
seq = 256
for step in range(a.steps):
    ids = torch.randint(1000, config.vocab_size, (a.bs, seq), device="cuda")
    mask = torch.rand(a.bs, seq, device="cuda") < 0.15
    labels = torch.where(mask, ids, torch.full_like(ids, -100))
    inputs = torch.where(mask, torch.full_like(ids, 103), ids)  # [MASK]
    model(input_ids=inputs, attention_mask=torch.ones_like(ids), labels=labels).loss.backward()
    ids = mask = labels = inputs = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("bert_mlm: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
