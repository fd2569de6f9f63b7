"""Fragmentation, then a large request: cached segments are split by
smaller tensors, so the 300 MiB request fails under a 1 GiB cap; the program
catches the OOM and skips that round (no change of course: the next round
does the same). Run under --capacity 1GiB."""
import torch

MiB = 1 << 20
caught = 0
for r in range(3):
    big = [torch.empty((40 + i % 3) * MiB, dtype=torch.uint8, device="cuda") for i in range(20)]
    del big
    keep = [torch.empty((28 + i % 3) * MiB, dtype=torch.uint8, device="cuda") for i in range(20)]
    try:
        x = torch.empty(300 * MiB, dtype=torch.uint8, device="cuda")
        del x
    except torch.OutOfMemoryError:
        caught += 1
    del keep
print("caught", caught, "OOMs")
