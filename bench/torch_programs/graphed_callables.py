"""A small MLP made into CUDA graphs with torch.cuda.make_graphed_callables
(forward and backward captured) and trained for a number of steps.
Optional argument: number of steps (default 40)."""
import sys
import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
torch.manual_seed(0)
batch = 128
model = nn.Sequential(nn.Linear(512, 2048), nn.ReLU(), nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 10)).cuda()
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.01)

# requires_grad of the sample must match that of the real inputs (False here).
sample = torch.randn(batch, 512, device="cuda")
graphed = torch.cuda.make_graphed_callables(model, (sample,))

loss_sum = 0.0
for step in range(steps):
    x = torch.randn(batch, 512, device="cuda")
    target = torch.randint(0, 10, (batch,), device="cuda")
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(graphed(x), target)
    loss.backward()
    opt.step()
    loss_sum += loss.item()
print("graphed_callables: %d steps, mean loss %.4f" % (steps, loss_sum / steps))
