"""A transformer layer trained on variable sequence lengths; a batch that
runs out of memory is skipped after empty_cache. Run under --capacity 1GiB."""
import torch
import torch.nn as nn

torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True).cuda()
opt = torch.optim.AdamW(layer.parameters())
skipped = 0
for step, seq in enumerate([256, 512, 1024, 2048, 3072, 768, 2560, 384]):
    try:
        x = torch.randn(16, seq, 512, device="cuda")
        layer(x).mean().backward()
        opt.step()
    except torch.OutOfMemoryError:
        skipped += 1
        x = None
        torch.cuda.empty_cache()
    opt.zero_grad(set_to_none=True)
print("skipped", skipped, "batches")
