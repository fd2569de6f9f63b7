"""A timm ConvNeXt-T (random weights, no download) in bf16 under
torch.inference_mode, classifying random 3x288x288 images, --bs images a
batch, --steps batches. An OOM is not caught: exit status 1."""
import argparse

import timm
import torch

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
model = timm.create_model("convnext_tiny", pretrained=False).to(device="cuda", dtype=torch.bfloat16).eval()
with torch.inference_mode():
    for step in range(a.steps):
        x = torch.randn(a.bs, 3, 288, 288, device="cuda", dtype=torch.bfloat16)
        top = model(x).float().softmax(-1).argmax(-1)
        x = top = None
torch.cuda.synchronize()
print("convnext_infer: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
