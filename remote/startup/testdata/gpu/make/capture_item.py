# A host sync (.item()) inside CUDA graph capture, as a kernel's validate mode does.
import torch
x = torch.randn(1024, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    y = x * 2  # warm up
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
    bound = y.abs().max().item()
