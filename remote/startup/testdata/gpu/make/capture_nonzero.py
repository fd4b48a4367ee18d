# torch.nonzero (a data-dependent output size: a host sync) inside CUDA graph capture.
import torch
x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    idx = torch.nonzero(x > 0)
