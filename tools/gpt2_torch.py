"""GPT-2 in PyTorch with the same parameter names, layout and initialisation
rules as fsdp.c's src/models/gpt2.c: the oracle of the parity test and the
baseline of the benchmarks. It computes in fp32, or under fsdp.c's 16-bit dtype
contract (compute_in, dtype_contract.py), each stored value rounded where fsdp.c
rounds it."""
import math

import torch
import torch.nn.functional as F

from dtype_contract import FP32
from fsdp_module import FsdpModule


class Block(torch.nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        C = n_embd
        self.n_head = n_head
        self.ln1 = torch.nn.LayerNorm(C)
        self.qkv = torch.nn.Linear(C, 3 * C)
        self.attn_proj = torch.nn.Linear(C, C)
        self.ln2 = torch.nn.LayerNorm(C)
        self.fc = torch.nn.Linear(C, 4 * C)
        self.mlp_proj = torch.nn.Linear(4 * C, C)
        self.contract = FP32

    def attention(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        c = self.contract
        q, k, v = c.store(self.qkv(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))
        if c.fused:
            y = c.attention(q, k, v)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        y = c.store(y.transpose(1, 2).reshape(B, T, C))
        return c.store(self.attn_proj(y))

    def forward(self, x):
        c = self.contract
        x = c.store(x + self.attention(c.store(self.ln1(x))))
        h = c.store(F.gelu(c.store(self.fc(c.store(self.ln2(x)))), approximate="tanh"))
        return c.store(x + c.store(self.mlp_proj(h)))


class GPT2(FsdpModule):
    def __init__(self, n_layer, n_head, n_embd, vocab_size, max_seq_len):
        super().__init__()
        self.wte = torch.nn.Parameter(torch.empty(vocab_size, n_embd))
        self.wpe = torch.nn.Parameter(torch.empty(max_seq_len, n_embd))
        self.blocks = torch.nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.lnf = torch.nn.LayerNorm(n_embd)
        self.n_layer = n_layer
        self.contract = FP32
        self.init_like_nanogpt()

    def init_like_nanogpt(self):
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                torch.nn.init.zeros_(p)
            elif p.dim() == 1:
                torch.nn.init.ones_(p)
            else:
                std = 0.02 / math.sqrt(2 * self.n_layer) if name.endswith("proj.weight") else 0.02
                torch.nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        B, T = idx.shape
        c = self.contract
        x = c.store(self.wte[idx] + self.wpe[:T])
        for block in self.blocks:
            x = block(x)
        logits = c.store(c.store(self.lnf(x)) @ self.wte.t())
        cross_entropy = c.cross_entropy if c.fused else F.cross_entropy
        loss = cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T))
        return logits, loss

    def fsdp_named_parameters(self):
        """Parameters under fsdp.c's names ("wte", "h.0.ln1.weight", ...)."""
        ours = {"ln1": "ln1", "qkv": "attn.qkv", "attn_proj": "attn.proj", "ln2": "ln2", "fc": "mlp.fc",
                "mlp_proj": "mlp.proj"}
        for name, p in self.named_parameters():
            if name.startswith("blocks."):
                _, layer, module, kind = name.split(".")
                yield f"h.{layer}.{ours[module]}.{kind}", p
            else:
                yield name, p
