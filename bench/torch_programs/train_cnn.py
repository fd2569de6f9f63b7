"""A small CNN trained for a few steps: no OOM. Run unmodified under
gpumem reuse-sim record -o (bench/record-confirm.sh)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
opt = torch.optim.AdamW(model.parameters())
for step in range(6):
    x = torch.randn(32 + 8 * step, 3, 96, 96, device="cuda")
    loss = nn.functional.cross_entropy(model(x), torch.randint(0, 10, (x.shape[0],), device="cuda"))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("trained", step + 1, "steps")
