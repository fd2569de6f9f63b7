"""Issue 44, an OOM inside a CUDA graph capture: an 8-layer MLP (4096 wide,
batch 8192) warmed up on a side stream, a cache of freed blocks made (2 GiB
of tensors allocated and freed), then a graph captured whose body, after
the MLP's forward, asks for more memory than the GPU has: the capture's
allocation runs out of memory (during a capture PyTorch cannot free its
cache, so it does not retry) and the program catches it. The same request
outside a capture follows (there PyTorch frees its cache and retries
once). Then a capture that fits, replayed 3 times. About 3 GiB at the peak
uncapped; every OOM caught, printed as caught_ooms=N."""
import torch
import torch.nn as nn

MiB = 1 << 20
caught = 0
torch.manual_seed(0)
total = torch.cuda.mem_get_info()[1]


def counted(fn):
    global caught
    try:
        return fn()
    except torch.OutOfMemoryError:
        caught += 1
        return None


model = counted(lambda: nn.Sequential(*[nn.Linear(4096, 4096) for _ in range(8)]).cuda())
static_in = counted(lambda: torch.randn(8192, 4096, device="cuda"))
if model is not None and static_in is not None:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(2):
            counted(lambda: model(static_in))
    torch.cuda.current_stream().wait_stream(side)
# A cache of freed blocks, which a retry could release.
churn = [counted(lambda: torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")) for _ in range(8)]
churn = None

# The capture whose allocation cannot be met.
g = torch.cuda.CUDAGraph()
capture_error = None
try:
    with torch.no_grad(), torch.cuda.graph(g):
        out = model(static_in) if model is not None and static_in is not None else None
        too_big = torch.empty(total + 256 * MiB, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError:
    caught += 1
    capture_error = "OutOfMemoryError"
except RuntimeError as e:  # anything else the failed capture left: said, not hidden
    capture_error = "RuntimeError: %s" % str(e).splitlines()[0]
out = too_big = None
g = None
torch.cuda.synchronize()
print("graph_capture_oom: capture ended with %s" % capture_error, flush=True)

# The same request outside a capture.
counted(lambda: torch.empty(total + 256 * MiB, dtype=torch.uint8, device="cuda"))

# A capture that fits, replayed.
if model is not None and static_in is not None:
    g2 = torch.cuda.CUDAGraph()
    try:
        with torch.no_grad(), torch.cuda.graph(g2):
            static_out = model(static_in)
        for _ in range(3):
            g2.replay()
    except torch.OutOfMemoryError:
        caught += 1
    g2 = static_out = None
torch.cuda.synchronize()
s = torch.cuda.memory_stats()
print("graph_capture_oom: caught_ooms=%d peak_reserved=%d retries=%d num_ooms=%d device_allocs=%d" % (
    caught, s["reserved_bytes.all.peak"], s["num_alloc_retries"], s["num_ooms"], s["num_device_alloc"]))
