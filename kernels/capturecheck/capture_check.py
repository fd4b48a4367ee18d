"""Capture smoke check for a sitecustomize-injected kernel (the reference
check of bringup's issue 25), run on a GPU host before a restart.

It proves, in seconds, what an engine would find out ten minutes into its
startup: whether the kernel, in a mode, survives CUDA graph capture.

    python3 capture_check.py --mode validate [--site DIR] [--kernel kdtree_verify]

1. The kernel is imported the way the service imports it: the script
   re-runs itself with KDTREE_MODE=<mode> and DIR first on PYTHONPATH, so
   Python's startup imports DIR/sitecustomize.py, which imports the kernel
   (or not, in off).
2. Warm-up: three eager calls on a side stream (as torch.cuda.graphs asks).
3. Capture: one call inside torch.cuda.graph.
4. Replay with new inputs copied into the captured ones; compare against
   the reference computed eagerly.

Exit 0 when the mode survives capture and the replay matches; 1 when
capture fails (the exception, PyTorch's own text, and its traceback are
printed, so bringup's diagnosis reads them as it reads an engine's log) or
the replay differs; 2 when the check itself cannot run (no CUDA, no kernel).
The last line is one verdict: `capture-check: PASS|FAIL|ERROR mode=... ...`.
"""

import argparse
import importlib
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ENV_VAR = "KDTREE_MODE"
REEXEC_MARK = "BRINGUP_CAPTURE_CHECK_CHILD"


def verdict(word, mode, detail):
    print(f"capture-check: {word} mode={mode} {detail}", flush=True)


def reexec(args):
    """Run this script again with the mode and the kernel's site on the
    environment, so that sitecustomize.py runs at interpreter startup."""
    env = dict(os.environ)
    env[ENV_VAR] = args.mode
    env["PYTHONPATH"] = os.pathsep.join(p for p in [args.site, env.get("PYTHONPATH", "")] if p)
    env[REEXEC_MARK] = "1"
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:], env)


def reference_attention(torch, q, k, v, idx):
    """The attention the kernel computes, eagerly and obviously."""
    ks, vs = k[idx], v[idx]
    s = torch.einsum("bhd,bkhd->bhk", q, ks) / q.shape[-1] ** 0.5
    return torch.einsum("bhk,bkhd->bhd", s.softmax(-1), vs)


def inputs(torch, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    b, h, d, n, kk = 8, 4, 64, 512, 32
    q = torch.randn(b, h, d, generator=g).to(device)
    k = torch.randn(n, h, d, generator=g).to(device)
    v = torch.randn(n, h, d, generator=g).to(device)
    idx = torch.randint(0, n, (b, kk), generator=g).to(device)
    return q, k, v, idx


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", required=True, help="the kernel's mode: off, validate, on")
    p.add_argument("--site", default=os.path.join(HERE, "site"), help="the directory with sitecustomize.py (the unit's PYTHONPATH)")
    p.add_argument("--kernel", default="kdtree_verify", help="the kernel's Python module")
    args = p.parse_args()
    if os.environ.get(REEXEC_MARK) != "1":
        reexec(args)  # does not return
    start = time.monotonic()
    try:
        import torch
    except ImportError as e:
        verdict("ERROR", args.mode, f"no torch: {e}")
        return 2
    if not torch.cuda.is_available():
        verdict("ERROR", args.mode, "no CUDA device")
        return 2
    loaded = args.kernel in sys.modules
    if loaded != (args.mode != "off"):
        verdict("ERROR", args.mode, f"sitecustomize.py in {args.site} {'loaded' if loaded else 'did not load'} {args.kernel}")
        return 2
    if loaded:
        forward = importlib.import_module(args.kernel).forward
    else:
        forward = lambda q, k, v, idx: reference_attention(torch, q, k, v, idx)  # noqa: E731

    device = torch.device("cuda")
    static = inputs(torch, 0, device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            forward(*static)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    t0 = time.monotonic()
    try:
        with torch.cuda.graph(graph):
            out = forward(*static)
    except Exception as e:  # what the engine would die of
        traceback.print_exc(file=sys.stdout)
        # Leaving torch.cuda.graph after a failed op raises again ("a
        # previous error during capture"): the first error is the cause.
        root = e
        while root.__context__ is not None:
            root = root.__context__
        first = str(root).splitlines()[0] if str(root) else ""
        verdict("FAIL", args.mode, f"graph capture failed after {time.monotonic() - start:.1f}s: {type(root).__name__}: {first}")
        return 1
    capture_s = time.monotonic() - t0

    fresh = inputs(torch, 1, device)
    for dst, src in zip(static, fresh):
        dst.copy_(src)
    graph.replay()
    torch.cuda.synchronize()
    want = reference_attention(torch, *fresh)
    err = (out - want).abs().max().item()
    if not torch.allclose(out, want, atol=1e-3, rtol=1e-3):
        verdict("FAIL", args.mode, f"replay differs from the reference: max error {err:.3g}")
        return 1
    verdict("PASS", args.mode, f"captured in {capture_s:.2f}s, replay matches the reference (max error {err:.2g}), {time.monotonic() - start:.1f}s in all on {torch.cuda.get_device_name()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
