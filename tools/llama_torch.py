"""Llama 3 in PyTorch (no transformers): Hugging Face's LlamaForCausalLM's math
(RMSNorm in float32, rotate-half RoPE with Llama 3.1's frequency scaling, grouped-query
attention through repeat_kv, a SwiGLU MLP, no biases, the head tied or not) under
torchtitan's module names, which fsdp.c's src/models/llama.c dumps its parameters with;
and torchtitan's initialisation rules. The oracle of the Llama parity test. It computes in
fp32, or under fsdp.c's 16-bit dtype contract (compute_in, dtype_contract.py), each stored
value rounded where fsdp.c rounds it: then RMSNorm rounds once (fsdp.c's kernel), not twice
as transformers' does."""
import math

import torch
import torch.nn.functional as F

from dtype_contract import FP32
from fsdp_module import FsdpModule


def llama_rope_table(maxT, hd, theta, factor, low_freq_factor, high_freq_factor, old_context_len):
    """The cos/sin table (maxT, hd) as [cos | sin] of each position's angles, computed in
    float32 the way transformers' LlamaRotaryEmbedding and _compute_llama3_parameters do."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    if factor > 0:
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        inv_freq = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
    positions = torch.arange(maxT, dtype=torch.int64).float()
    freqs = (inv_freq[:, None] @ positions[None, :]).t()
    return torch.cat((freqs.cos(), freqs.sin()), dim=-1).double()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, table):
    """Hugging Face's apply_rotary_pos_emb on x (B, heads, T, hd) from table's first T rows."""
    T, half = x.shape[2], x.shape[3] // 2
    cos = table[:T, :half].repeat(1, 2).to(x.dtype)
    sin = table[:T, half:].repeat(1, 2).to(x.dtype)
    return x * cos + rotate_half(x) * sin


def repeat_kv(x, n_rep):
    """(B, NKV, T, hd) -> (B, NKV * n_rep, T, hd): query head h reads kv head h // n_rep."""
    B, NKV, T, hd = x.shape
    return x[:, :, None].expand(B, NKV, n_rep, T, hd).reshape(B, NKV * n_rep, T, hd)


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps
        self.contract = FP32

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.contract.store(self.weight * (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype))


class Attention(torch.nn.Module):
    def __init__(self, dim, n_head, n_kv_head):
        super().__init__()
        self.n_head, self.n_kv_head, self.hd = n_head, n_kv_head, dim // n_head
        self.wq = torch.nn.Linear(dim, n_head * self.hd, bias=False)
        self.wk = torch.nn.Linear(dim, n_kv_head * self.hd, bias=False)
        self.wv = torch.nn.Linear(dim, n_kv_head * self.hd, bias=False)
        self.wo = torch.nn.Linear(n_head * self.hd, dim, bias=False)
        self.contract = FP32

    def rotated_qkv(self, x, rope):
        """q, k and v as (B, heads, T, hd), q and k rotated."""
        B, T, _ = x.shape
        c = self.contract
        q = c.store(self.wq(x)).view(B, T, self.n_head, self.hd).transpose(1, 2)
        k = c.store(self.wk(x)).view(B, T, self.n_kv_head, self.hd).transpose(1, 2)
        v = c.store(self.wv(x)).view(B, T, self.n_kv_head, self.hd).transpose(1, 2)
        return c.store(apply_rope(q, rope)), c.store(apply_rope(k, rope)), v

    def forward(self, x, rope):
        B, T, _ = x.shape
        c = self.contract
        q, k, v = self.rotated_qkv(x, rope)
        k, v = repeat_kv(k, self.n_head // self.n_kv_head), repeat_kv(v, self.n_head // self.n_kv_head)
        if c.fused:
            y = c.attention(q, k, v)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.hd)
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        return c.store(self.wo(c.store(y.transpose(1, 2).reshape(B, T, -1))))


class FeedForward(torch.nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = torch.nn.Linear(dim, hidden, bias=False)  # gate
        self.w2 = torch.nn.Linear(hidden, dim, bias=False)  # down
        self.w3 = torch.nn.Linear(dim, hidden, bias=False)  # up
        self.contract = FP32

    def forward(self, x):
        c = self.contract
        return c.store(self.w2(c.store(F.silu(c.store(self.w1(x))) * c.store(self.w3(x)))))


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention_norm = RMSNorm(c["n_embd"], c["norm_eps"])
        self.attention = Attention(c["n_embd"], c["n_head"], c["n_kv_head"])
        self.ffn_norm = RMSNorm(c["n_embd"], c["norm_eps"])
        self.feed_forward = FeedForward(c["n_embd"], c["ffn_hidden"])
        self.contract = FP32

    def forward(self, x, rope):
        c = self.contract
        h = c.store(x + self.attention(self.attention_norm(x), rope))
        return c.store(h + self.feed_forward(self.ffn_norm(h)))


class Llama(FsdpModule):
    """c: the model_config's fields by name (tests/parity_dump.c's "config")."""

    def __init__(self, c):
        super().__init__()
        self.tok_embeddings = torch.nn.Embedding(c["vocab_size"], c["n_embd"])
        self.layers = torch.nn.ModuleList(Block(c) for _ in range(c["n_layer"]))
        self.norm = RMSNorm(c["n_embd"], c["norm_eps"])
        self.output = None if c["tied"] else torch.nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        rope = llama_rope_table(c["max_seq_len"], c["n_embd"] // c["n_head"], c["rope_theta"], c["rope_factor"],
                                c["rope_low_freq_factor"], c["rope_high_freq_factor"], c["rope_original_max_seq_len"])
        self.register_buffer("rope", rope.float())
        self.contract = FP32

    def forward(self, idx, targets):
        c = self.contract
        x = c.store(self.tok_embeddings(idx))
        rope = c.constant(self.rope)
        for block in self.layers:
            x = block(x, rope)
        head = self.tok_embeddings.weight if self.output is None else self.output.weight
        logits = c.store(self.norm(x) @ head.t())
        cross_entropy = c.cross_entropy if c.fused else F.cross_entropy
        loss = cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss

    def fsdp_named_parameters(self):
        """Parameters under fsdp.c's names, which are torchtitan's ("tok_embeddings.weight",
        "layers.0.attention.wq.weight", ...)."""
        return self.named_parameters()

    def init_rule(self, name):
        """torchtitan's rule for a parameter (models/llama3/model/model.py, init_weights with
        depth_init): ("normal", std), ("trunc_normal", std, bound) or ("ones",). A tied
        matrix takes the output projection's, as fsdp.c's does."""
        dim = self.norm.weight.shape[0]
        if name.endswith("norm.weight"):
            return ("ones",)
        if name == "output.weight" or (name == "tok_embeddings.weight" and self.output is None):
            return ("trunc_normal", dim ** -0.5, 3 * dim ** -0.5)
        if name == "tok_embeddings.weight":
            return ("normal", 1.0)
        layer = int(name.split(".")[1])
        depth_scaled = ("attention.wo", "feed_forward.w2", "feed_forward.w3")
        std = 0.02 / (2 * (layer + 1)) ** 0.5 if any(s in name for s in depth_scaled) else 0.02
        return ("trunc_normal", std, 2.0)  # torch's default bounds, absolute

    def init_like_torchtitan(self):
        with torch.no_grad():
            for name, p in self.fsdp_named_parameters():
                rule = self.init_rule(name)
                if rule[0] == "ones":
                    torch.nn.init.ones_(p)
                elif rule[0] == "normal":
                    torch.nn.init.normal_(p, 0.0, rule[1])
                else:
                    torch.nn.init.trunc_normal_(p, 0.0, rule[1], -rule[2], rule[2])
