# A checkpoint shard cut short (a download that stopped): safetensors refuses it.
import os, torch
from safetensors.torch import save_file, load_file
path = "/tmp/model-00001-of-00002.safetensors"
save_file({"lm_head.weight": torch.randn(256, 256)}, path)
with open(path, "r+b") as f:
    f.truncate(os.path.getsize(path) // 2)
load_file(path, device="cuda")
