"""Host-to-device prefetch on a side stream from pinned memory: each batch is
copied on the side stream while the previous one trains, then handed to the
default stream with record_stream. Batch sizes grow so that, under a cap of
about 1 GiB, some steps run out of memory; such a batch is skipped.
Optional argument: number of steps (default 24)."""
import sys
import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 24
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
opt = torch.optim.Adam(model.parameters())
sizes = [512, 1024, 2048, 4096, 8192, 16384, 3072, 24576, 1536, 12288, 6144, 32768]
copy_stream = torch.cuda.Stream()


def prefetch(step):
    rows = sizes[step % len(sizes)]
    host = torch.randn(rows, 1024).pin_memory()
    with torch.cuda.stream(copy_stream):
        dev = host.to("cuda", non_blocking=True)
    return dev


skipped = 0
done = 0
nxt = prefetch(0)
for step in range(steps):
    torch.cuda.current_stream().wait_stream(copy_stream)
    x = nxt
    x.record_stream(torch.cuda.current_stream())
    nxt = prefetch(step + 1) if step + 1 < steps else None
    try:
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        done += 1
    except torch.cuda.OutOfMemoryError:
        skipped += 1
        loss = None
    opt.zero_grad(set_to_none=True)
    del x
torch.cuda.synchronize()
print("side_stream_prefetch: %d steps trained, %d skipped" % (done, skipped))
