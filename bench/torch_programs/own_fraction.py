"""An MLP trained with growing batches under a memory cap the program sets
itself (torch.cuda.set_per_process_memory_fraction, 1 GiB of the GPU); a
batch that runs out of memory is skipped and training goes on."""
import torch
import torch.nn as nn

total = torch.cuda.mem_get_info()[1]
torch.cuda.set_per_process_memory_fraction((1 << 30) / total)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4096, 8192), nn.GELU(), nn.Linear(8192, 8192), nn.GELU(), nn.Linear(8192, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
skipped = 0
for step, batch in enumerate([512, 1024, 2048, 4096, 8192, 1024, 6144, 2048, 12288, 512]):
    try:
        x = torch.randn(batch, 4096, device="cuda")
        model(x).square().mean().backward()
        opt.step()
    except torch.OutOfMemoryError:
        skipped += 1
        x = None
    opt.zero_grad(set_to_none=True)
print("skipped", skipped, "of 10 batches")
