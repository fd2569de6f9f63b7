"""Greedy generation with a transformers GPT-2 (gpt2's shape, built from its
config: random weights, no download) for rounds of prompts; a round that
runs out of memory is retried as two halves, recursively, down to one
prompt (then dropped). The program changes course after an OOM. The cap is
gpumem's (--capacity): the program uses the default device."""
import time

import torch
from transformers import GPT2Config, GPT2LMHeadModel

start = time.time()
torch.manual_seed(0)
config = GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=1024)
model = GPT2LMHeadModel(config).cuda().eval()
ooms, generated, dropped = 0, 0, 0


def generate(ids):
    """Generates for every prompt of ids, halving on OOM; returns how many finished."""
    global ooms, dropped
    refused = False
    try:
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=48, min_new_tokens=48,
                                 do_sample=False, pad_token_id=0)
        finished = out.shape[0]
    except torch.cuda.OutOfMemoryError:
        refused = True
    out = None
    if not refused:
        return finished
    ooms += 1
    torch.cuda.empty_cache()
    if ids.shape[0] == 1:
        dropped += 1
        return 0
    half = ids.shape[0] // 2
    return generate(ids[:half]) + generate(ids[half:])


for batch in (16, 48, 96, 64):
    prompts = torch.randint(1, config.vocab_size, (batch, 256), device="cuda")
    generated += generate(prompts)
    prompts = None
print("converge-result: caught_ooms=%d; gpt2_generate_retry: %d sequences generated, %d dropped, %.1f s" % (
    ooms, generated, dropped, time.time() - start))
