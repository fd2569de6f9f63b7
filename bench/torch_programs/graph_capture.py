"""A small model captured with torch.cuda.graph (warm-up on a side stream,
static input and output), replayed many times with eager work beside it; the
graph is then deleted (its private pool released) and eager work goes on.
Optional argument: number of replays (default 50)."""
import sys
import torch
import torch.nn as nn

replays = int(sys.argv[1]) if len(sys.argv) > 1 else 50
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024), nn.LayerNorm(1024)).cuda().eval()
static_input = torch.randn(64, 1024, device="cuda")

# Warm-up on a side stream, as the CUDA graphs documentation shows.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side), torch.no_grad():
    for _ in range(3):
        model(static_input)
torch.cuda.current_stream().wait_stream(side)

graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_output = model(static_input)

total = 0.0
eager = []
for i in range(replays):
    static_input.copy_(torch.randn(64, 1024, device="cuda"))
    graph.replay()
    total += static_output.sum().item()
    # Eager work beside the graph: tensors of varying size, some kept a while.
    eager.append(torch.randn(256 + 64 * (i % 7), 1024, device="cuda") @ torch.randn(1024, 512, device="cuda"))
    if len(eager) > 4:
        eager.pop(0)

del graph, static_output
eager.clear()
# Eager work after the graph is gone: its pool's memory may be reused or freed.
with torch.no_grad():
    for i in range(10):
        y = model(torch.randn(128 + 32 * i, 1024, device="cuda"))
        total += y.sum().item()
torch.cuda.synchronize()
print("graph_capture: %d replays, checksum %.3f" % (replays, total))
