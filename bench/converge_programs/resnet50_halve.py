"""ResNet-50 training (timm's when timm is there, else torchvision's; random
weights and data) whose batch is halved after an OOM and kept halved: the
program changes course after an OOM. Momentum buffers appear after the first
step, so a batch that fits step 1 may not fit step 2. The cap is gpumem's
(--capacity): the program uses the default device."""
import time

import torch
import torch.nn.functional as F

start = time.time()
torch.manual_seed(0)
try:
    import timm

    model, source = timm.create_model("resnet50", num_classes=100), "timm"
except ImportError:
    import torchvision

    model, source = torchvision.models.resnet50(num_classes=100), "torchvision"
model = model.cuda().train()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
batch, ooms, trained = 96, 0, []
for step in range(4):
    while batch >= 1:
        refused = False
        try:
            x = torch.randn(batch, 3, 176, 176, device="cuda")
            y = torch.randint(0, 100, (batch,), device="cuda")
            F.cross_entropy(model(x), y).backward()
            opt.step()
        except torch.cuda.OutOfMemoryError:
            refused = True
        x = y = None
        opt.zero_grad(set_to_none=True)
        if not refused:
            trained.append(batch)
            break
        ooms += 1
        batch //= 2
    torch.cuda.synchronize()
print("converge-result: caught_ooms=%d; resnet50_halve (%s): batches trained %s, %.1f s" % (ooms, source, trained, time.time() - start))
