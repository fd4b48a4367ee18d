# A Triton kernel that does not compile (a name that is not defined).
import torch, triton, triton.language as tl

@triton.jit
def broken(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs) * scale_not_defined)

src = torch.randn(128, device="cuda")
broken[(1,)](src, torch.empty_like(src), BLOCK=128)
