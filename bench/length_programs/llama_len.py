"""A Llama-shaped decoder (8 layers, hidden 1024, MLP 2816, grouped-query
attention 16/4 heads, vocabulary 32000, built from LlamaConfig: random
weights, no download) fine-tuned in bf16 (weights, gradients and AdamW's
state all bf16, as a bf16 checkpoint is fine-tuned) on random token ids:
--bs sequences (default 4) of --seq tokens a batch, labels = the inputs,
--steps steps. Attention is transformers' default, PyTorch's SDPA (flash
under bf16): memory linear in the length. RoPE computes its angles per
call, so no table bounds --seq (max_position_embeddings 8192 is the
config's word only). An OOM is not caught: exit status 1.

Memory on paper, not yet measured: about 155 M parameters (embedding and
an untied head 33 M each, 11 M a layer), 1.25 GB of weights, gradients and
AdamW's moments in bf16 (0.3 GB more for a moment in the step); per token
of a sequence about 1.05 MB (0.56 MB in the 8 layers: the RMS norms in
fp32, q/k/v, RoPE's copies, the gated MLP's four 2816-wide tensors; 0.26 MB
of fp32 logits and log-softmax; about 0.25 MB of backward transients):
4.2 MB per unit of L at bs 4. Expected about 1150 under 6 GiB and 3200
under 14 GiB. One run about 8-12 s on an H200."""
import argparse

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--seq", type=int, required=True)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
config = LlamaConfig(vocab_size=32000, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                     num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=8192)
model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
for step in range(a.steps):
    ids = torch.randint(0, config.vocab_size, (a.bs, a.seq), device="cuda")
    model(input_ids=ids, labels=ids).loss.backward()
    ids = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("llama_len: %s attention, seq %d, bs %d, %d steps, peak allocated %d" % (
    model.config._attn_implementation, a.seq, a.bs, a.steps, torch.cuda.max_memory_allocated()))
