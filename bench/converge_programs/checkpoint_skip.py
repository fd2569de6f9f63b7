"""Six transformer blocks under activation checkpointing
(torch.utils.checkpoint, non-reentrant) trained on sequences of varying
length; a step that runs out of memory is skipped (after empty_cache). The
program changes course after an OOM: AdamW's state appears at the first
step that succeeds. The cap is gpumem's (--capacity): the program uses the
default device."""
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

start = time.time()
torch.manual_seed(0)
blocks = nn.ModuleList(nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True) for _ in range(6)).cuda()
opt = torch.optim.AdamW(blocks.parameters())
done, skipped = [], []
for seq in (512, 1024, 2048, 1536, 3072, 1024, 2560, 768):
    refused = False
    try:
        x = torch.randn(8, seq, 768, device="cuda")
        for block in blocks:
            x = checkpoint(block, x, use_reentrant=False)
        x.square().mean().backward()
        opt.step()
    except torch.cuda.OutOfMemoryError:
        refused = True
    x = None
    opt.zero_grad(set_to_none=True)
    if refused:
        skipped.append(seq)
        torch.cuda.empty_cache()
    else:
        done.append(seq)
torch.cuda.synchronize()
print("converge-result: caught_ooms=%d; checkpoint_skip: sequences trained %s, skipped %s, %.1f s" % (
    len(skipped), done, skipped, time.time() - start))
