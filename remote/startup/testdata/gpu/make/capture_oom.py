# Out of memory while capturing a CUDA graph.
import torch
x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    big = torch.empty(int(400 * 2**30), dtype=torch.uint8, device="cuda")
