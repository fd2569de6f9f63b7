"""A parent that works on the GPU, then starts a child process with
multiprocessing (spawn, no launcher) that does its own GPU work, and waits
for it: two processes using CUDA, neither with a rank."""
import multiprocessing

import torch


def child_work(n):
    torch.manual_seed(1)
    weights = [torch.randn(1024, 1024, device="cuda") for _ in range(n)]
    x = torch.randn(256, 1024, device="cuda")
    for w in weights:
        x = torch.relu(x @ w)
    print("child done", float(x.sum()))


if __name__ == "__main__":
    torch.manual_seed(0)
    a = torch.randn(2048, 2048, device="cuda")
    b = (a @ a).relu()
    child = multiprocessing.get_context("spawn").Process(target=child_work, args=(12,))
    child.start()
    c = torch.randn(4096, 1024, device="cuda") @ b[:1024, :1024]
    child.join()
    print("parent done", float(c.sum()), "child exit", child.exitcode)
