"""A transformers T5-small-shaped encoder-decoder (4+4 layers, d_model 512,
built from T5Config: random weights, no download) trained on random
token ids, 256 source and 64 target tokens a pair, --bs pairs a batch,
AdamW, --steps steps. An OOM is not caught: exit status 1."""
import argparse

import torch
from transformers import T5Config, T5ForConditionalGeneration

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
config = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048, num_layers=4, num_decoder_layers=4, num_heads=8,
                  decoder_start_token_id=0, pad_token_id=0)
model = T5ForConditionalGeneration(config).cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(a.steps):
    src = torch.randint(2, config.vocab_size, (a.bs, 256), device="cuda")
    tgt = torch.randint(2, config.vocab_size, (a.bs, 64), device="cuda")
    model(input_ids=src, labels=tgt).loss.backward()
    src = tgt = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("t5_train: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
