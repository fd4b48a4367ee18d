# torch.cuda.synchronize() inside CUDA graph capture.
import torch
x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x + 1
    torch.cuda.synchronize()
