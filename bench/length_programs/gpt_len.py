"""A transformers GPT-2 small (12 layers, hidden 768, 12 heads, vocabulary
50257, built from GPT2Config: random weights, no download) trained as a
causal language model on random token ids: --bs sequences of --seq tokens
a batch (labels = the inputs), AdamW, bf16 autocast (weights, gradients
and AdamW's state in fp32, the matmuls and attention in bf16), --steps
steps, attention by --attn (attn_implementation): eager (the score matrix
batch x heads x L x L, its softmax and dropout kept for the backward:
memory quadratic in L) or sdpa (PyTorch's flash kernel under bf16: linear
in L). An OOM is not caught: exit status 1. A --seq past the position
table is refused (exit status 2), never tried.

n_positions is 8192 (--positions): the position table must cover every
length a search may try (an index past it is a device-side assert, a
failure, not an OOM), and its size (6.3 M parameters) is the same at every
L, so it does not bend the growth. Not 16384: transformers versions that
still register GPT-2's causal-mask buffer (n_positions^2 bools a layer)
would put 12 x 256 MiB = 3 GiB of it on the GPU, half a 6 GiB cap; at 8192
it is 768 MiB where present, nothing where not (the last line says which).

Memory on paper (bs 2), not yet measured: about 130 M parameters, 2.3 GB
before the first activation (fp32 weights 0.52, AdamW's two moments 1.04,
the gradients filling in during the backward, autocast's bf16 copies of
the weights 0.26), AdamW's step 0.5 GB more for a moment; per token of a
sequence about 1.7 MB (0.8 MB in the 12 blocks, 0.5 MB of fp32 logits and
log-softmax over 50257 words, 0.4 MB of backward transients): 3.4 MB per
unit of L at bs 2; eager adds about 96 bytes a head per L^2 a sequence
(softmax's fp32 output 4, the bf16 copy 2 and dropout's mask 1 kept in
each of 12 layers, plus one layer's transients): 2.3 KB x L^2 at bs 2.
Expected: eager about 800 under 6 GiB and 1700 under 14 GiB, sdpa about
1200 and 3700 (100-200 less where the mask buffer is there). One run about
8-12 s on an H200 (imports and building the model; the steps < 1 s)."""
import argparse
import sys

import torch
from transformers import AutoModelForCausalLM, GPT2Config

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--seq", type=int, required=True)
p.add_argument("--bs", type=int, default=2)
p.add_argument("--attn", choices=("eager", "sdpa"), default="sdpa")
p.add_argument("--steps", type=int, default=3)
p.add_argument("--positions", type=int, default=8192, help="n_positions: the longest --seq the model takes")
a = p.parse_args()
if not 1 <= a.seq <= a.positions:
    sys.exit("gpt_len: --seq %d is outside the position table (1..%d, --positions)" % (a.seq, a.positions))
torch.manual_seed(0)
config = GPT2Config(n_positions=a.positions)  # GPT-2 small's shape: 12 layers, 768 wide, 12 heads
# A GPT2LMHeadModel, attention as asked (Hugging Face's documented way to choose it).
model = AutoModelForCausalLM.from_config(config, attn_implementation=a.attn).cuda().train()
mask_buffers = sum(b.numel() * b.element_size() for name, b in model.named_buffers() if name.endswith("attn.bias"))
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(a.steps):
    ids = torch.randint(0, config.vocab_size, (a.bs, a.seq), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    ids = loss = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("gpt_len: %s attention, seq %d, bs %d, %d steps, peak allocated %d, causal-mask buffers %d bytes" % (
    model.config._attn_implementation, a.seq, a.bs, a.steps, torch.cuda.max_memory_allocated(), mask_buffers))
