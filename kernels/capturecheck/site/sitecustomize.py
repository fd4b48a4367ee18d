# kdtree-verify: loaded through PYTHONPATH. The mode comes from KDTREE_MODE
# (off, validate, on); validate checks every call against the reference and
# syncs with the host to do it, which breaks CUDA graph capture.
import os

KDTREE_MODE = os.environ.get("KDTREE_MODE", "off")
if KDTREE_MODE != "off":
    import kdtree_verify  # noqa: F401
