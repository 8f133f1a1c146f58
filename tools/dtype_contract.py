"""fsdp.c's dtype contract (../shared/DESIGN.md, "Kernels"; docs/architecture.md, "The
ops' contracts") in PyTorch, for the 16-bit references of the parity checks
(tools/parity.py): what a model computes when its parameters, activations and unsharded
gradients are 16-bit and its math is fp32.

A value that fsdp.c stores in the compute dtype is rounded to it exactly where fsdp.c
rounds it, and nowhere else: each op's output in the forward, and in the backward the
gradient of each stored tensor once all its uses have added into it (autograd sums a
tensor's gradients in fp32; `store` rounds the sum once). Between those points the math
is fp32 on the rounded values, as in fsdp.c's kernels (fp32 registers, fp32 accumulation
in the products). The tensors keep their float dtype (float32) holding 16-bit values:
widening is exact, and PyTorch's CPU kernels take fp16 in few places.

Two ops are fused in fsdp.c, so their insides are rounded only where fsdp.c rounds them,
and are written out here: attention, tiled as FlashAttention-2 computes it in 16 bits
(the scores, the online softmax and its gradient in fp32; the probabilities rounded
before p @ v and dv, the softmax's gradient rounded before its two products) and
the softmax cross-entropy (the per-token losses in fp32 from the rounded logits; the
probabilities stored rounded, and the logits' gradient computed from them).

FP32 is the contract in fp32: nothing rounded, and the models' own attention and loss,
so that the fp32 references are the plain PyTorch models they always were."""
import math

import torch
import torch.nn.functional as F


class _Stored(torch.autograd.Function):
    """x rounded to dtype; in the backward, x's gradient rounded to dtype."""

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = dtype
        return x.to(dtype).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype).to(grad.dtype), None


def _causal_mask(T, device):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


# The keys fsdp.c's CPU attention takes at once: the running maximum of the forward moves
# at these keys (src/nn/cpu/attention.h, ATTENTION_KEYS).
ATTENTION_KEYS = 256


class _Attention(torch.autograd.Function):
    """Causal attention over (B, heads, T, hs) q, k and v (k and v repeated for the query
    heads sharing them: autograd then sums a kv head's gradients in fp32), as fsdp.c's
    tiled attention computes it in 16 bits (src/nn/cpu/attention.c, FlashAttention-2's
    algorithm): the forward walks the keys a block at a time with a running row maximum m
    and sum l, p = exp(s - m) rounded to dtype before p @ v, l summed from p unrounded,
    out = acc / l, and keeps lse = m + log l; the backward recomputes p = exp(s - lse),
    rounds it for dv, and rounds ds = p (dp - D), D = rowsum(dout * out), before dq and
    dk. out is the op's stored output (rounded), which D reads."""

    @staticmethod
    def forward(ctx, q, k, v, dtype):
        T, hs = q.shape[-2], q.shape[-1]
        scale = 1.0 / math.sqrt(hs)
        mask = _causal_mask(T, q.device)
        m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype, device=q.device)
        l = torch.zeros_like(m)
        acc = torch.zeros_like(q)
        for k0 in range(0, T, ATTENTION_KEYS):
            k1 = min(k0 + ATTENTION_KEYS, T)
            s = (q @ k[..., k0:k1, :].transpose(-2, -1)) * scale
            s = s.masked_fill(~mask[:, k0:k1], float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            p = torch.exp(s - m_new)
            rescale = torch.exp(m - m_new)
            l = l * rescale + p.sum(dim=-1, keepdim=True)
            acc = acc * rescale + p.to(dtype).to(p.dtype) @ v[..., k0:k1, :]
            m = m_new
        out = (acc * (1.0 / l)).to(dtype).to(acc.dtype)
        ctx.dtype = dtype
        ctx.save_for_backward(q, k, v, out, m + torch.log(l))
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse = ctx.saved_tensors
        T, hs = q.shape[-2], q.shape[-1]
        scale = 1.0 / math.sqrt(hs)
        s = ((q @ k.transpose(-2, -1)) * scale).masked_fill(~_causal_mask(T, q.device), float("-inf"))
        p = torch.exp(s - lse)
        dv = p.to(ctx.dtype).to(p.dtype).transpose(-2, -1) @ dout
        D = (dout * out).sum(dim=-1, keepdim=True)
        ds = p * (dout @ v.transpose(-2, -1) - D)
        ds = ds.to(ctx.dtype).to(ds.dtype)
        return ds @ k * scale, ds.transpose(-2, -1) @ q * scale, dv, None


class _CrossEntropy(torch.autograd.Function):
    """The mean over N tokens of the per-token losses, in fp32 from the (rounded) logits
    (N, V); the probabilities are stored rounded to dtype, and the backward's
    (probs - onehot) / N is computed from them."""

    @staticmethod
    def forward(ctx, logits, targets, dtype):
        probs = logits.softmax(dim=-1).to(dtype).to(logits.dtype)
        ctx.save_for_backward(probs, targets)
        return F.cross_entropy(logits, targets)

    @staticmethod
    def backward(ctx, grad):
        probs, targets = ctx.saved_tensors
        onehot = F.one_hot(targets, probs.shape[-1]).to(probs.dtype)
        return (probs - onehot) * (grad / probs.shape[0]), None, None


class Contract16:
    """16-bit compute: dtype is torch.bfloat16 or torch.float16."""

    fused = True

    def __init__(self, dtype):
        self.dtype = dtype

    def store(self, x):
        return _Stored.apply(x, self.dtype)

    def constant(self, x):
        """A stored tensor that has no gradient (the RoPE table)."""
        return x.to(self.dtype).to(x.dtype)

    def attention(self, q, k, v):
        return _Attention.apply(q, k, v, self.dtype)

    def cross_entropy(self, logits, targets):
        return _CrossEntropy.apply(logits, targets, self.dtype)


class _Fp32:
    fused = False

    def store(self, x):
        return x

    def constant(self, x):
        return x


FP32 = _Fp32()
