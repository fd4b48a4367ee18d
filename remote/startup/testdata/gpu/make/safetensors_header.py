# A checkpoint shard that is not safetensors at all (an HTML error page saved as the file).
from safetensors.torch import load_file
path = "/tmp/model-00002-of-00002.safetensors"
with open(path, "wb") as f:
    f.write(b"<!DOCTYPE html><html><body>Access denied</body></html>\n")
load_file(path, device="cuda")
