"""torchvision's Faster R-CNN (ResNet-50 FPN, random weights, no download)
in eval, --bs random 480x640 images a batch, --steps batches. The
transform keeps the images' size (min_size 480, max_size 640). With random
weights every proposal scores about alike, so the detections' number, and
the memory after the RPN, depend on the data as well as the batch. An OOM
is not caught: exit status 1."""
import argparse

import torch
from torchvision.models.detection import fasterrcnn_resnet50_fpn

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--bs", type=int, required=True)
p.add_argument("--steps", type=int, default=3)
a = p.parse_args()
torch.manual_seed(0)
model = fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None, min_size=480, max_size=640).cuda().eval()
with torch.no_grad():
    for step in range(a.steps):
        images = [torch.rand(3, 480, 640, device="cuda") for _ in range(a.bs)]
        out = model(images)
        images = out = None
torch.cuda.synchronize()
print("detection_eval: bs %d, %d steps, peak allocated %d" % (a.bs, a.steps, torch.cuda.max_memory_allocated()))
