"""A small convolutional network trained on images of changing sizes, the
kind of run people give PYTORCH_ALLOC_CONF=expandable_segments:True
(PyTorch 2.9's name; PYTORCH_CUDA_ALLOC_CONF before)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(128, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).cuda()
opt = torch.optim.Adam(model.parameters())
for step, size in enumerate([64, 96, 128, 80, 160, 112, 192, 64, 144, 176] * 2):
    x = torch.randn(32, 3, size, size, device="cuda")
    y = torch.randint(0, 10, (32,), device="cuda")
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("torch", torch.__version__, "peak reserved", torch.cuda.max_memory_reserved())
