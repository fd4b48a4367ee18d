"""kdtree-verify, seed-shaped and runnable: attention over the keys a k-d
tree picked for each query (here, given as indices), in plain PyTorch.

forward() is what an engine would call inside its forward pass, and so
inside CUDA graph capture. In validate mode the marshalling reads the
tree's depth as a Python int (a host sync) and the result is checked
against the reference on the host: both break capture.
"""
import os

from . import marshal
from .kernel import tree_attention

MODE = os.environ.get("KDTREE_MODE", "off")
VERSION = "0.3.0"


def forward(q, k, v, idx):
    packed = marshal.pack(idx)
    out = tree_attention(q, k, v, packed)
    if MODE == "validate":
        from .validate import check

        check(out, q, k, v, idx)
    return out
