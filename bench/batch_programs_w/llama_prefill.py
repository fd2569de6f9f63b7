"""A Llama-shaped decoder (8 layers, hidden 1024, grouped-query attention
16/4 heads, built from LlamaConfig: random weights, no download) in bf16
under torch.inference_mode: the prefill of --bs prompts of 1024 random
tokens a batch (the KV cache built, the next token's logits from the last
position), --steps batches. An OOM is not caught: exit status 1."""
import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                     num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=2048)
model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
seq = 1024
with torch.inference_mode():
    for step in range(a.steps):
        ids = torch.randint(0, config.vocab_size, (a.bs, seq), device="cuda")
        out = model.model(input_ids=ids, use_cache=True)
        # Only the last position's logits, as a generation loop's prefill.
        next_token = model.lm_head(out.last_hidden_state[:, -1, :]).argmax(-1)
        ids = out = next_token = None
torch.cuda.synchronize()
print("llama_prefill: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
