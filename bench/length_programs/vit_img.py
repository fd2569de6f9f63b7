"""A timm ViT-S/16 (vit_small_patch16_224's shape: 12 blocks, 384 wide, 6
heads; random weights, no download) built for --img S (img_size=S: its
position table for (S/16)^2 patches and the class token) and trained on
random 3 x S x S images, 100 classes: --bs images a batch (default 32),
AdamW, bf16 autocast, --steps steps. timm's attention is PyTorch's SDPA
(fused_attn), so memory is linear in the tokens, (S/16)^2 + 1: quadratic
in S. Search S in multiples of 16, the patch size (gpumem --multiple-of
16); another S is cut to (S//16)^2 patches. An OOM is not caught: exit
status 1.

Memory on paper, not yet measured: 22 M parameters, 0.4 GB of weights,
gradients and AdamW's moments in fp32 and autocast's copies; per token of
an image about 255 KB (12 blocks of about 54 x 384 bytes: the layer norms'
fp32 inputs and outputs, q/k/v and the attention's output in bf16, the
residuals in fp32, the MLP's 1536-wide input and GELU in bf16; the image
itself 3 KB a patch): 8.2 MB per (S/16)^2 at bs 32, 1.6 GB at S = 224.
Expected about 430 under 6 GiB and 670 under 14 GiB. One run about
6-10 s on an H200."""
import argparse

import timm
import torch
import torch.nn.functional as F

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--img", type=int, required=True)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
model = timm.create_model("vit_small_patch16_224", pretrained=False, img_size=a.img, num_classes=100).cuda().train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(a.steps):
    x = torch.randn(a.bs, 3, a.img, a.img, device="cuda")
    y = torch.randint(0, 100, (a.bs,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    x = y = loss = None
    opt.step()
    opt.zero_grad(set_to_none=True)
torch.cuda.synchronize()
print("vit_img: img %d (%d tokens), bs %d, %d steps, peak allocated %d" % (
    a.img, (a.img // 16) ** 2 + 1, a.bs, a.steps, torch.cuda.max_memory_allocated()))
