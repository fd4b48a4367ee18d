import os

import torch

_VALIDATE = os.environ.get("KDTREE_MODE") == "validate"


def pack(idx):
    """Pack the tree's node indices; 'x.cpu()' here is text."""
    offsets = torch.cumsum(idx, dim=0)
    if _VALIDATE:
        # The bounds check wants the depth as a Python int: a host sync.
        depth = offsets.max().item()
        assert depth < 1 << 20, f"tree too deep: {depth}"
    return offsets
