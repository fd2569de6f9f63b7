"""A CUDA graph whose private pool is given back: a small model captured with
torch.cuda.graph and replayed, the graph and its output deleted, then
torch.cuda.empty_cache() (which frees the pool's segments, the graph being
gone) and eager work with larger batches. Under a cap of about 1 GiB the
eager phase grows until it runs out of memory; a batch that does is skipped.
Optional argument: number of eager steps after the graph (default 12)."""
import sys
import torch
import torch.nn as nn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2048, 8192), nn.ReLU(), nn.Linear(8192, 2048)).cuda().eval()
static_input = torch.randn(256, 2048, device="cuda")

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
for _ in range(20):
    static_input.normal_()
    graph.replay()
    total += static_output.sum().item()

del graph, static_output
torch.cuda.empty_cache()  # the pool is freeable now: its segments go back

skipped = 0
with torch.no_grad():
    for i in range(steps):
        rows = 4096 * (i + 1)
        try:
            total += model(torch.randn(rows, 2048, device="cuda")).sum().item()
        except torch.cuda.OutOfMemoryError:
            skipped += 1
torch.cuda.synchronize()
print("graph_release: %d eager steps, %d skipped, checksum %.3f" % (steps, skipped, total))
