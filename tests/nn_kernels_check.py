"""Checks the CPU layer kernels (and the truncated normal init) against PyTorch.

Reads the named tensors written by nn_kernels_test, recomputes every forward output and gradient in float64 with torch, and fails
on any mismatch. Gradients are compared with their initial value plus the true
gradient, since every backward must accumulate.

usage: scripts/torch-python tests/nn_kernels_check.py nn_kernels.bin
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from llama_torch import llama_rope_table, rotate_half  # noqa: E402
from tensor_file import read_tensors  # noqa: E402

# float32 kernels against a float64 oracle: |got - want| <= ATOL + RTOL * |want|.
ATOL = 1e-4
RTOL = 1e-4


def read_records(path):
    return {name: torch.from_numpy(t.astype(np.float64)) for name, t in read_tensors(path).items()}


class Checker:
    def __init__(self, records):
        self.records = records
        self.failures = []

    def group(self, kernel):
        prefix = kernel + "/"
        found = {k[len(prefix):]: v for k, v in self.records.items() if k.startswith(prefix)}
        if not found:
            self.failures.append("%s: no records in the file" % kernel)
        return found

    def compare(self, kernel, results):
        """results: list of (tensor name, got, want). Prints one line for the kernel."""
        worst, worst_name, bad = 0.0, "", []
        for name, got, want in results:
            if tuple(got.shape) != tuple(want.shape):
                bad.append("%s: shape %s, expected %s" % (name, tuple(got.shape), tuple(want.shape)))
                continue
            err = (got - want).abs()
            if not torch.isfinite(got).all():
                bad.append("%s: non-finite values" % name)
                continue
            limit = ATOL + RTOL * want.abs()
            if err.numel() and err.max().item() > worst:
                worst, worst_name = err.max().item(), name
            if (err > limit).any():
                i = int(torch.argmax(err - limit))
                bad.append("%s: element %d is %.8g, expected %.8g (abs err %.3g)"
                           % (name, i, got.flatten()[i].item(), want.flatten()[i].item(), err.flatten()[i].item()))
        status = "FAIL" if bad else "ok"
        print("kernel %s: max abs err %.3g (%s), %d tensors, %s"
              % (kernel, worst, worst_name, len(results), status))
        for line in bad:
            print("    MISMATCH " + line)
            self.failures.append("%s: %s" % (kernel, line))


def grads(outputs, douts, inputs):
    """Gradients of sum(output * dout) with respect to inputs (a vector-Jacobian product)."""
    return torch.autograd.grad(outputs, inputs, douts)


def leaf(t):
    return t.clone().requires_grad_(True)


def check_encoder(c, kernel):
    r = c.group(kernel)
    inp = r["inp"].long()
    B, T = inp.shape
    wte = leaf(r["wte"])
    if "wpe" in r:
        wpe = leaf(r["wpe"])
        out = wte[inp] + wpe[:T].unsqueeze(0)
        dwte, dwpe = grads(out, r["dout"], (wte, wpe))
        results = [("dwpe", r["dwpe"], r["dwpe0"] + dwpe)]
    else:
        out = wte[inp]
        (dwte,) = grads(out, r["dout"], (wte,))
        results = []
    c.compare(kernel, [
        ("out", r["out"], out.detach()),
        ("dwte", r["dwte"], r["dwte0"] + dwte),
    ] + results)


def check_layernorm(c):
    r = c.group("layernorm")
    x, w, b = leaf(r["inp"]), leaf(r["weight"]), leaf(r["bias"])
    C = x.shape[-1]
    out = F.layer_norm(x, (C,), w, b, eps=1e-5)
    xd = x.detach()
    mean = xd.mean(-1)
    rstd = 1.0 / torch.sqrt(xd.var(-1, unbiased=False) + 1e-5)
    dx, dw, db = grads(out, r["dout"], (x, w, b))
    c.compare("layernorm", [
        ("out", r["out"], out.detach()),
        ("mean", r["mean"], mean),
        ("rstd", r["rstd"], rstd),
        ("dinp", r["dinp"], r["dinp0"] + dx),
        ("dweight", r["dweight"], r["dweight0"] + dw),
        ("dbias", r["dbias"], r["dbias0"] + db),
    ])


def check_matmul(c, kernel):
    r = c.group(kernel)
    x, w = leaf(r["inp"]), leaf(r["weight"])
    b = leaf(r["bias"]) if "bias" in r else None
    out = F.linear(x, w, b)
    inputs = (x, w) + ((b,) if b is not None else ())
    g = grads(out, r["dout"], inputs)
    results = [
        ("out", r["out"], out.detach()),
        ("dinp", r["dinp"], r["dinp0"] + g[0]),
        ("dweight", r["dweight"], r["dweight0"] + g[1]),
    ]
    if b is not None:
        results.append(("dbias", r["dbias"], r["dbias0"] + g[2]))
    c.compare(kernel, results)


def check_attention(c, kernel):
    r = c.group(kernel)
    B, T, C, NH = (int(v) for v in r["sizes"].tolist())
    hs = C // NH
    qkv = leaf(r["qkv"])
    q, k, v = (t.view(B, T, NH, hs).transpose(1, 2) for t in qkv.split(C, dim=2))
    scores = q @ k.transpose(-2, -1) / math.sqrt(hs)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    out = (att @ v).transpose(1, 2).reshape(B, T, C)
    (dqkv,) = grads(out, r["dout"], (qkv,))
    c.compare(kernel, [
        ("out", r["out"], out.detach()),
        ("lse", r["lse"], torch.logsumexp(scores.masked_fill(~mask, float("-inf")), dim=-1).detach()),
        ("dqkv", r["dqkv"], r["dqkv0"] + dqkv),
    ])


def check_gelu(c, kernel):
    r = c.group(kernel)
    x = leaf(r["inp"])
    out = F.gelu(x, approximate="tanh")
    (dx,) = grads(out, r["dout"], (x,))
    c.compare(kernel, [
        ("out", r["out"], out.detach()),
        ("dinp", r["dinp"], r["dinp0"] + dx),
    ])


def check_gelu_tail(c, kernel):
    """Relative errors of 1e-5 where GELU's value is 1e-15 and smaller: x sigmoid(2u), which
    is 0.5 x (1 + tanh u) without its cancellation (in float64 too, below x = -6)."""
    r = c.group(kernel)
    x = leaf(r["inp"])
    out = x * torch.sigmoid(2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))
    (dx,) = grads(out, torch.ones_like(x), (x,))
    bad = []
    for name, got, want in (("out", r["out"], out.detach()), ("dinp", r["dinp"], dx)):
        rel = ((got - want).abs() / want.abs()).max().item()
        if rel > 1e-5:
            bad.append("%s: relative error %.3g, above 1e-5" % (name, rel))
    print("kernel %s: %s" % (kernel, "FAIL" if bad else "ok"))
    for line in bad:
        print("    MISMATCH " + line)
        c.failures.append("%s: %s" % (kernel, line))


def check_classifier(c, kernel):
    r = c.group(kernel)
    V = int(r["vocab"].item())
    logits = leaf(r["logits"][:, :V])
    targets = r["targets"].long()
    losses = F.cross_entropy(logits, targets, reduction="none")
    dloss = r["dloss"].item()
    (dlogits,) = grads(losses, torch.full_like(losses, dloss), (logits,))
    padded = torch.cat([dlogits, torch.zeros(dlogits.shape[0], r["logits"].shape[1] - V, dtype=dlogits.dtype)], 1)
    c.compare(kernel, [
        ("losses", r["losses"], losses.detach()),
        ("dlogits", r["dlogits"], padded),
        ("inplace", r["inplace"], padded),
        ("inplace_losses", r["inplace_losses"], losses.detach()),
    ])


def check_rmsnorm(c, kernel):
    r = c.group(kernel)
    eps = r["params"][0].item()
    x, w = leaf(r["inp"]), leaf(r["weight"])
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    out = w * (x * rstd)
    dx, dw = grads(out, r["dout"], (x, w))
    c.compare(kernel, [
        ("out", r["out"], out.detach()),
        ("rstd", r["rstd"], rstd.detach().squeeze(-1)),
        ("dinp", r["dinp"], r["dinp0"] + dx),
        ("dweight", r["dweight"], r["dweight0"] + dw),
    ])


def check_rope(c, kernel):
    r = c.group(kernel)
    theta, factor, low, high, old_context_len = r["params"].tolist()
    maxT, hd = r["table"].shape
    table = llama_rope_table(maxT, hd, theta, factor, low, high, old_context_len)
    x = leaf(r["inp"])
    T, half = x.shape[1], hd // 2
    # Hugging Face's apply_rotary_pos_emb, with the heads after the positions.
    cos = table[:T, :half].repeat(1, 2)[None, :, None, :]
    sin = table[:T, half:].repeat(1, 2)[None, :, None, :]
    out = x * cos + rotate_half(x) * sin
    (dx,) = grads(out, r["dout"], (x,))
    c.compare(kernel, [
        ("table", r["table"], table),
        ("out", r["out"], out.detach()),
        ("inplace", r["inplace"], out.detach()),
        ("dinp", r["dinp"], r["dinp0"] + dx),
    ])


def check_swiglu(c, kernel):
    r = c.group(kernel)
    gate, up = leaf(r["gate"]), leaf(r["up"])
    out = F.silu(gate) * up
    dgate, dup = grads(out, r["dout"], (gate, up))
    c.compare(kernel, [
        ("out", r["out"], out.detach()),
        ("dgate", r["dgate"], r["dgate0"] + dgate),
        ("dup", r["dup"], r["dup0"] + dup),
    ])


def check_gqa_attention(c, kernel):
    r = c.group(kernel)
    q, k, v = leaf(r["q"]), leaf(r["k"]), leaf(r["v"])
    B, T, NH, hd = q.shape
    NKV = k.shape[2]
    # Hugging Face's repeat_kv: query head h reads kv head h // (NH / NKV).
    qh = q.transpose(1, 2)
    kh, vh = (t.transpose(1, 2).repeat_interleave(NH // NKV, dim=1) for t in (k, v))
    scores = qh @ kh.transpose(-2, -1) / math.sqrt(hd)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    out = (att @ vh).transpose(1, 2).reshape(B, T, NH * hd)
    dq, dk, dv = grads(out, r["dout"], (q, k, v))
    results = [
        ("out", r["out"], out.detach()),
        ("lse", r["lse"], torch.logsumexp(scores.masked_fill(~mask, float("-inf")), dim=-1).detach()),
        ("dk", r["dk"], r["dk0"] + dk),
        ("dv", r["dv"], r["dv0"] + dv),
    ]
    if "dq" in r:
        results.append(("dq", r["dq"], r["dq0"] + dq))
    c.compare(kernel, results)


def check_cached_attention(c, kernel):
    """The rows of the last n positions of causal attention over all L."""
    r = c.group(kernel)
    q, k, v = r["q"], r["k"], r["v"]
    n, NH, hd = q.shape
    L, NKV = k.shape[0], k.shape[1]
    kh, vh = (t.transpose(0, 1).repeat_interleave(NH // NKV, dim=0) for t in (k, v))
    scores = q.transpose(0, 1) @ kh.transpose(-2, -1) / math.sqrt(hd)
    positions = torch.arange(L - n, L).unsqueeze(1)
    mask = torch.arange(L).unsqueeze(0) <= positions
    att = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    out = (att @ vh).transpose(0, 1).reshape(n, NH * hd)
    c.compare(kernel, [("out", r["out"], out)])


def check_init_trunc_normal(c):
    """Bounds, the first draw kept where it is in bounds, and the truncated normal's
    standard deviation, std * sqrt(1 - 2 b phi(b) / (2 Phi(b) - 1)) for bounds at b std."""
    kernel = "init_trunc_normal"
    r = c.group(kernel)
    std, bound = r["params"].tolist()
    x, normal = r["x"], r["normal"]
    inside = normal.abs() <= bound
    b = torch.tensor(bound / std, dtype=torch.float64)
    phi = torch.exp(-b * b / 2) / math.sqrt(2 * math.pi)
    mass = torch.erf(b / math.sqrt(2))
    want_std = std * math.sqrt(1 - 2 * b * phi / mass)
    # Five standard errors of the sample's mean and standard deviation.
    n = x.numel()
    mean_tol, std_tol = 5 * want_std / math.sqrt(n), 5 * want_std / math.sqrt(2 * n)
    bad = []
    if x.abs().max() > bound:
        bad.append("a value of %.6g is out of bounds %g" % (x.abs().max(), bound))
    if not torch.equal(x[inside], normal[inside]):
        bad.append("a value in bounds was not the first draw")
    if inside.all():
        bad.append("no value was redrawn")
    if abs(x.mean()) > mean_tol or abs(x.std() - want_std) > std_tol:
        bad.append("mean %.5g and std %.5g, expected 0 and %.5g" % (x.mean(), x.std(), want_std))
    print("kernel %s: %d of %d redrawn, std %.5f (expected %.5f), %s"
          % (kernel, int((~inside).sum()), n, x.std(), want_std, "FAIL" if bad else "ok"))
    for line in bad:
        print("    MISMATCH " + line)
        c.failures.append("%s: %s" % (kernel, line))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: nn_kernels_check.py nn_kernels.bin")
    c = Checker(read_records(sys.argv[1]))
    checks = [
        lambda: check_encoder(c, "encoder"),
        lambda: check_encoder(c, "encoder_nopos"),
        lambda: check_layernorm(c),
        lambda: check_matmul(c, "matmul"),
        lambda: check_matmul(c, "matmul_nobias"),
        lambda: check_matmul(c, "matmul_set"),
        lambda: check_attention(c, "attention"),
        lambda: check_attention(c, "attention_long"),
        lambda: check_attention(c, "attention_tiles"),
        lambda: check_attention(c, "attention_blocks"),
        lambda: check_attention(c, "attention_set"),
        lambda: check_gelu(c, "gelu"),
        lambda: check_gelu(c, "gelu_set"),
        lambda: check_gelu_tail(c, "gelu_tail"),
        lambda: check_classifier(c, "classifier"),
        lambda: check_classifier(c, "classifier_padded"),
        lambda: check_rmsnorm(c, "rmsnorm"),
        lambda: check_rmsnorm(c, "rmsnorm_offset"),
        lambda: check_rope(c, "rope"),
        lambda: check_rope(c, "rope_scaled"),
        lambda: check_swiglu(c, "swiglu"),
        lambda: check_swiglu(c, "swiglu_set"),
        lambda: check_gqa_attention(c, "gqa_attention"),
        lambda: check_gqa_attention(c, "gqa_attention_mha"),
        lambda: check_gqa_attention(c, "gqa_attention_long"),
        lambda: check_gqa_attention(c, "gqa_attention_nodq"),
        lambda: check_gqa_attention(c, "gqa_attention_tiles"),
        lambda: check_gqa_attention(c, "gqa_attention_tiles_nodq"),
        lambda: check_gqa_attention(c, "gqa_attention_blocks"),
        lambda: check_gqa_attention(c, "gqa_attention_blocks_set"),
        lambda: check_cached_attention(c, "cached_attention_step"),
        lambda: check_cached_attention(c, "cached_attention_chunk"),
        lambda: check_cached_attention(c, "cached_attention_prefill"),
        lambda: check_cached_attention(c, "cached_attention_long"),
        lambda: check_init_trunc_normal(c),
    ]
    for check in checks:
        try:
            check()
        except KeyError as e:
            c.failures.append("missing record %s" % e)
            print("    MISSING record %s" % e)
    if c.failures:
        print("FAILED: %d mismatches against PyTorch:" % len(c.failures))
        for f in c.failures:
            print("  " + f)
        sys.exit(1)
    print("all kernels match PyTorch")


if __name__ == "__main__":
    main()
