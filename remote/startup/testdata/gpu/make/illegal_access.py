# A Triton kernel that reads far past its buffer: an illegal memory access.
import torch, triton, triton.language as tl

@triton.jit
def far_read(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(src + offs + (1 << 40))
    tl.store(dst + offs, v, mask=offs < n)

src = torch.randn(128, device="cuda")
dst = torch.empty_like(src)
far_read[(1,)](src, dst, 128, BLOCK=128)
torch.cuda.synchronize()
