# Work forked to a side stream during capture and never joined back.
import torch
x = torch.randn(1024, device="cuda")
side = torch.cuda.Stream()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 3
