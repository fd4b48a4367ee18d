# Out of memory outside capture, as weights or the KV cache would be.
import torch
keep = torch.empty(int(100 * 2**30), dtype=torch.uint8, device="cuda")
more = torch.empty(int(100 * 2**30), dtype=torch.uint8, device="cuda")
