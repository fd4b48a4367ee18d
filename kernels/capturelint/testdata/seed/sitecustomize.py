# kdtree-verify: loaded through PYTHONPATH=/opt/kdtree/site. The mode comes
# from KDTREE_MODE (off, validate, on). A comment that says x.item() is no call.
import os

KDTREE_MODE = os.environ.get("KDTREE_MODE", "off")
if KDTREE_MODE != "off":
    import kdtree_verify  # noqa: F401
