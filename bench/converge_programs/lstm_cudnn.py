"""A 3-layer LSTM (cuDNN's) trained on sequences of growing length; a step
that runs out of memory is redone as two chunks of the batch with gradient
accumulation, and the program keeps the smaller chunks from then on (down
to one sample). It changes course after an OOM. cuDNN's own workspace
requests may be refused and retried by PyTorch without the program seeing
them. The cap is gpumem's (--capacity): the program uses the default
device."""
import time

import torch
import torch.nn as nn

start = time.time()
torch.manual_seed(0)
lstm = nn.LSTM(512, 1024, num_layers=3, batch_first=True).cuda()
head = nn.Linear(1024, 512).cuda()
params = list(lstm.parameters()) + list(head.parameters())
opt = torch.optim.Adam(params)
BATCH, chunks, ooms, trained = 64, 1, 0, []
for seq in (128, 256, 384, 512, 640, 320):
    while chunks <= BATCH:
        refused = False
        try:
            size = BATCH // chunks
            for c in range(chunks):
                x = torch.randn(size, seq, 512, device="cuda")
                out, _ = lstm(x)
                (head(out) - x).square().mean().div(chunks).backward()
                x = out = None
            opt.step()
        except torch.cuda.OutOfMemoryError:
            refused = True
        x = out = None
        opt.zero_grad(set_to_none=True)
        if not refused:
            trained.append((seq, chunks))
            break
        ooms += 1
        chunks *= 2
        torch.cuda.empty_cache()
torch.cuda.synchronize()
print("converge-result: caught_ooms=%d; lstm_cudnn: (sequence, chunks) trained %s, %.1f s" % (ooms, trained, time.time() - start))
