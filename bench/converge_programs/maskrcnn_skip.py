"""Mask R-CNN (torchvision, random weights, no download) in eval on random
images of growing sizes, two images a batch; a batch that runs out of memory
is skipped (after empty_cache) and the program goes on to the next, larger
one. It changes course after an OOM: under a setting that grants a request
the capped recording saw refused, it reaches sizes the recording never did.
The cap is gpumem's (--capacity): the program uses the default device."""
import time

import torch
from torchvision.models.detection import maskrcnn_resnet50_fpn

start = time.time()
torch.manual_seed(0)
# box_score_thresh 0: random weights score every class about 1/91, so with
# the default threshold (0.05) nothing would be detected and no mask pasted.
model = maskrcnn_resnet50_fpn(weights=None, weights_backbone=None, box_score_thresh=0.0, box_detections_per_img=50)
model = model.cuda().eval()
done, skipped = [], []
with torch.no_grad():
    for size in (480, 640, 800, 960, 1120, 1280, 1440):
        # The transform resizes every image to min_size: move it with the size.
        model.transform.min_size = (size,)
        model.transform.max_size = 2 * size
        refused = False
        try:
            images = [torch.rand(3, size, size * 4 // 3, device="cuda") for _ in range(2)]
            out = model(images)
            detections = sum(len(o["boxes"]) for o in out)
        except torch.cuda.OutOfMemoryError:
            refused = True
        images = out = None
        if refused:
            skipped.append(size)
            torch.cuda.empty_cache()
        else:
            done.append(size)
        torch.cuda.synchronize()
print("converge-result: caught_ooms=%d; maskrcnn_skip: sizes done %s, skipped %s, %.1f s" % (len(skipped), done, skipped, time.time() - start))
