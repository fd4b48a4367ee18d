import os

import torch

_VALIDATE = os.environ.get("KDTREE_MODE") == "validate"


def pack(idx):
    """Pack the tree's node indices for the kernel."""
    packed = idx.to(torch.int64)
    if _VALIDATE:
        # The bounds check wants the depth as a Python int: a host sync.
        depth = packed.max().item()
        if depth < 0:
            raise ValueError(f"kdtree-verify: negative node index {depth}")
    return packed
