# A shard truncated while it is memory-mapped (another job rewrote it): SIGBUS.
import os, torch
from safetensors import safe_open
from safetensors.torch import save_file
path = "/tmp/shard.safetensors"
save_file({"w": torch.randn(4096, 4096)}, path)
with safe_open(path, framework="pt") as f:
    with open(path, "r+b") as g:
        g.truncate(4096)
    t = f.get_tensor("w").to("cuda")
    print(t.sum().item())
