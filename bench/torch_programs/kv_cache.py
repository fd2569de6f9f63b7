"""A KV cache grown by torch.cat, one token block at a time, for several
requests; an OOM ends the request's sequence early. Run under --capacity 1GiB."""
import torch

torch.manual_seed(0)
ended = 0
for req in range(4):
    cache = torch.empty(0, 16, 128, dtype=torch.float16, device="cuda")
    for t in range(1200 + 600 * req):
        try:
            cache = torch.cat([cache, torch.randn(64, 16, 128, dtype=torch.float16, device="cuda")])
        except torch.OutOfMemoryError:
            ended += 1
            break
    del cache
print("sequences ended by OOM:", ended)
