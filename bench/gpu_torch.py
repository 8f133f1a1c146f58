"""PyTorch's side of bench/gpu.sh, and its bookkeeping.

  run           trains tools/gpt2_torch.GPT2 or tools/llama_torch.Llama (the parity oracles)
                for a few steps in one mode and batch size after another, and appends one
                JSON object per (mode, batch size) to --json:
                  eager    fp32 parameters, torch.autocast(bfloat16)
                  sdpa     the same with attention through F.scaled_dot_product_attention
                  compile  eager under torch.compile (default mode, static shapes)
                  fsdp2    fully_shard on every block and the root, world size 1 over NCCL,
                           MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
  tokens        writes an llm.c token file (uint16) of random tokens for fsdp train
  fsdp-summary  turns a `fsdp train --log` file into the same kind of JSON object
  report        prints the markdown tables of a results file (tokens/s, MFU, peak memory)
  scaling       compares the loss and grad-norm trajectories of W = 2, 4 with W = 1

A training step is what fsdp.c times: zero_grad, forward, backward, global grad-norm
clipping at 1.0, AdamW (torch's default implementation, decaying matrices only), and
loss.item(). Batches are random tokens below min(vocab, 65536) (fsdp.c's token files
are uint16), drawn on the device. tokens/s and step ms are medians over the steps after
--warmup; peak memory is torch.cuda.max_memory_allocated() (tensors) and
max_memory_reserved() (the caching allocator's segments) over those steps and the warm-up.

FLOPs per token (PaLM, appendix B; nanoGPT's estimate_mfu): 6·N + 12·L·C·T, with N the
parameters that enter a matrix product (all of them but an untied input embedding table;
GPT-2's position table, norms and biases are counted, as llm.c does: under 1% too many),
L layers, C the width (query heads × head size), T the sequence length; the attention
term counts the whole T×T score matrix (llm.c counts half, for the causal mask).
MFU = FLOPs per token × tokens/s ÷ peak; the peak is bf16 dense: 989 TFLOP/s for an H100
SXM (and an H200), 756 for an H100 PCIe.

Runs on the CPU in a tiny configuration (`--device cpu`; fsdp2 then over gloo): with a
torch older than 2.x (Debian's 1.13), sdpa, compile and fsdp2 report "skipped".
"""
import argparse
import contextlib
import gc
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

# fsdp.c's presets (src/models/registry.c).
PRESETS = {
    "gpt2-tiny": dict(family="gpt2", n_layer=2, n_head=4, n_embd=128, vocab_size=256, max_seq_len=256),
    "shakespeare-char": dict(family="gpt2", n_layer=6, n_head=6, n_embd=384, vocab_size=256, max_seq_len=256),
    "gpt2": dict(family="gpt2", n_layer=12, n_head=12, n_embd=768, vocab_size=50257, max_seq_len=1024),
    "gpt2-medium": dict(family="gpt2", n_layer=24, n_head=16, n_embd=1024, vocab_size=50257, max_seq_len=1024),
    "gpt2-large": dict(family="gpt2", n_layer=36, n_head=20, n_embd=1280, vocab_size=50257, max_seq_len=1024),
    "gpt2-xl": dict(family="gpt2", n_layer=48, n_head=25, n_embd=1600, vocab_size=50257, max_seq_len=1024),
    "llama3-debug": dict(family="llama", n_layer=6, n_head=16, n_kv_head=16, n_embd=256, ffn_hidden=768,
                         vocab_size=2048, max_seq_len=2048, rope_factor=8.0, tied=0),
    "llama3-1b": dict(family="llama", n_layer=16, n_head=32, n_kv_head=8, n_embd=2048, ffn_hidden=8192,
                      vocab_size=128256, max_seq_len=8192, rope_factor=32.0, tied=1),
    "llama3-8b": dict(family="llama", n_layer=32, n_head=32, n_kv_head=8, n_embd=4096, ffn_hidden=14336,
                      vocab_size=128256, max_seq_len=8192, rope_factor=8.0, tied=0),
}
LLAMA_COMMON = dict(norm_eps=1e-5, rope_theta=500000.0, rope_low_freq_factor=1.0, rope_high_freq_factor=4.0,
                    rope_original_max_seq_len=8192)
OVERRIDES = ("n_layer", "n_head", "n_kv_head", "n_embd", "ffn_hidden", "vocab_size")
TOKEN_LIMIT = 65536  # fsdp.c's token files hold uint16


def shape_of(args):
    if args.model not in PRESETS:
        sys.exit(f"gpu_torch: unknown model '{args.model}' (known: {', '.join(PRESETS)})")
    s = dict(PRESETS[args.model])
    if s["family"] == "llama":
        s = {**LLAMA_COMMON, **s}
    for k in OVERRIDES:
        v = getattr(args, k, None)
        if v is not None:
            s[k] = v
    if s["family"] == "gpt2":
        s["n_kv_head"] = s["n_head"]
    return s


def count_params(s):
    """(all parameters, those in matrix products) of a shape, as fsdp.c lays them out."""
    C, L, V = s["n_embd"], s["n_layer"], s["vocab_size"]
    if s["family"] == "gpt2":
        block = 12 * C * C + 13 * C
        total = V * C + s["max_seq_len"] * C + L * block + 2 * C
        return total, total
    hd = C // s["n_head"]
    q, kv = s["n_head"] * hd, s["n_kv_head"] * hd
    block = 2 * C + C * q + 2 * C * kv + q * C + 3 * C * s["ffn_hidden"]
    total = V * C * (1 if s["tied"] else 2) + L * block + C
    return total, total - (0 if s["tied"] else V * C)


def flops_per_token(s, T):
    """PaLM's 6·N + 12·L·C·T (see the module's text)."""
    return 6 * count_params(s)[1] + 12 * s["n_layer"] * s["n_head"] * (s["n_embd"] // s["n_head"]) * T


# --- run: PyTorch training ----------------------------------------------------------------

def sdpa_attention(torch, F, family):
    """An attention forward through F.scaled_dot_product_attention (is_causal) for the oracle's
    modules: GPT-2's Block.attention, Llama's Attention.forward."""
    if family == "gpt2":
        def attention(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.attn_proj(y.transpose(1, 2).reshape(B, T, C))
        return attention
    import llama_torch

    def forward(self, x, rope):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_head, self.hd).transpose(1, 2)
        k = self.wk(x).view(B, T, self.n_kv_head, self.hd).transpose(1, 2)
        v = self.wv(x).view(B, T, self.n_kv_head, self.hd).transpose(1, 2)
        q, k = llama_torch.apply_rope(q, rope), llama_torch.apply_rope(k, rope)
        rep = self.n_head // self.n_kv_head
        k, v = llama_torch.repeat_kv(k, rep), llama_torch.repeat_kv(v, rep)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))
    return forward


ORIGINAL = {}


def build_model(torch, s, T, device, attention):
    import gpt2_torch
    import llama_torch
    import torch.nn.functional as F
    # The oracle's attention, or SDPA's, set each time: modes run one after another in a process.
    ORIGINAL.setdefault("gpt2", gpt2_torch.Block.attention)
    ORIGINAL.setdefault("llama", llama_torch.Attention.forward)
    gpt2_torch.Block.attention, llama_torch.Attention.forward = ORIGINAL["gpt2"], ORIGINAL["llama"]
    if attention == "sdpa":
        if not hasattr(F, "scaled_dot_product_attention"):
            raise RuntimeError(f"F.scaled_dot_product_attention needs torch >= 2.0 (this is {torch.__version__})")
        if s["family"] == "gpt2":
            gpt2_torch.Block.attention = sdpa_attention(torch, F, "gpt2")
        else:
            llama_torch.Attention.forward = sdpa_attention(torch, F, "llama")
    ctx = torch.device(device) if hasattr(torch.device(device), "__enter__") else contextlib.nullcontext()
    with ctx:  # build on the device where torch can (2.0+): no host copy of a large model
        if s["family"] == "gpt2":
            m = gpt2_torch.GPT2(s["n_layer"], s["n_head"], s["n_embd"], s["vocab_size"], max(T, s["max_seq_len"]))
            blocks = m.blocks
        else:
            c = {**s, "max_seq_len": T}
            m = llama_torch.Llama(c)
            m.init_like_torchtitan()
            blocks = m.layers
    return m.to(device), blocks


def oom_error(torch):
    return tuple(e for e in (getattr(torch.cuda, "OutOfMemoryError", None),) if e) or (RuntimeError,)


def run_mode(torch, args, s, mode, batch_sizes, out):
    device = args.device
    cuda = device.startswith("cuda")
    base = dict(program="torch", mode=mode, model=args.model, shape=s, seq_len=args.seq_len, world_size=1,
                dtype=args.dtype, torch_version=torch.__version__, device=device_name(torch, device),
                n_params=count_params(s)[0], flops_per_token=flops_per_token(s, args.seq_len))

    def emit(rec):
        rec = {**base, **rec}
        print(json.dumps({k: v for k, v in rec.items() if k not in ("shape", "losses")}), flush=True)
        with open(out, "a") as f:
            f.write(json.dumps(rec) + "\n")

    skip = None
    if mode == "compile" and not hasattr(torch, "compile"):
        skip = f"torch.compile needs torch >= 2.0 (this is {torch.__version__})"
    if mode == "fsdp2":
        try:
            fully_shard, MixedPrecisionPolicy = import_fsdp2()
        except ImportError as e:
            skip = f"fully_shard not found in torch {torch.__version__}: {e}"
    if mode == "sdpa" and not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        skip = f"F.scaled_dot_product_attention needs torch >= 2.0 (this is {torch.__version__})"
    if skip:
        for B in batch_sizes:
            emit(dict(batch_size=B, status="skipped", message=skip))
        return

    torch.manual_seed(args.seed)
    model = blocks = opt = None
    try:
        model, blocks = build_model(torch, s, args.seq_len, device, "sdpa" if mode == "sdpa" else "oracle")
        if mode == "fsdp2":
            mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            for b in blocks:
                fully_shard(b, mp_policy=mp)
            fully_shard(model, mp_policy=mp)
        params = list(model.parameters())
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
        fwd = torch.compile(model, dynamic=False) if mode == "compile" else model
    except Exception as e:  # noqa: BLE001 (reported, not hidden)
        for B in batch_sizes:
            emit(dict(batch_size=B, status="error", message=f"setting up: {type(e).__name__}: {e}"[:500]))
        return

    use_autocast = args.dtype == "bf16" and mode != "fsdp2"
    vocab_limit = min(s["vocab_size"], TOKEN_LIMIT)
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed)
    stop = False
    for B in batch_sizes:
        if stop:
            emit(dict(batch_size=B, status="not run", message="a smaller batch ran out of memory"))
            continue
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        times, losses = [], []
        try:
            for step in range(args.warmup + args.steps):
                tok = torch.randint(0, vocab_limit, (B, args.seq_len + 1), device=device, generator=gen)
                x, y = tok[:, :-1], tok[:, 1:]
                t0 = time.perf_counter()
                opt.zero_grad(set_to_none=True)
                ac = torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16) \
                    if use_autocast else contextlib.nullcontext()
                with ac:
                    _, loss = fwd(x, y)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
                losses.append(loss.item())  # waits for the step
                if cuda:
                    torch.cuda.synchronize()
                if step >= args.warmup:
                    times.append(time.perf_counter() - t0)
                if not math.isfinite(losses[-1]):
                    raise RuntimeError(f"loss is {losses[-1]} at step {step}")
            ms = statistics.median(times) * 1e3
            rec = dict(batch_size=B, status="ok", step_ms=ms, tokens_per_s=B * args.seq_len / (ms / 1e3),
                       steps=args.steps, warmup=args.warmup, first_loss=losses[0], last_loss=losses[-1],
                       losses=losses)
            if cuda:
                rec.update(peak_alloc_bytes=torch.cuda.max_memory_allocated(),
                           peak_reserved_bytes=torch.cuda.max_memory_reserved())
            emit(rec)
        except oom_error(torch) as e:
            if "out of memory" not in str(e).lower() and not type(e).__name__.startswith("OutOfMemory"):
                emit(dict(batch_size=B, status="error", message=f"{type(e).__name__}: {e}"[:500]))
            else:
                emit(dict(batch_size=B, status="oom", message=str(e).splitlines()[0][:300]))
            stop = True
        except Exception as e:  # noqa: BLE001 (a failed mode must not end the others)
            emit(dict(batch_size=B, status="error", message=f"{type(e).__name__}: {e}"[:500]))
            stop = True
        finally:
            opt.zero_grad(set_to_none=True)
            gc.collect()
            if cuda:
                torch.cuda.empty_cache()
    del model, blocks, opt, fwd
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()


def import_fsdp2():
    try:
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard, MixedPrecisionPolicy
    return fully_shard, MixedPrecisionPolicy


def device_name(torch, device):
    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(torch.device(device))
    return "cpu"


def cmd_run(args):
    import torch
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_torch: no CUDA device; use --device cpu for the tiny CPU check", file=sys.stderr)
        return 77
    s = shape_of(args)
    if args.device == "cpu":
        torch.set_num_threads(max(1, args.threads))
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in ("eager", "sdpa", "compile", "fsdp2"):
            sys.exit(f"gpu_torch: unknown mode '{m}' (eager, sdpa, compile, fsdp2)")
    batches = [int(b) for b in args.batch_sizes.replace(",", " ").split()]
    pg = False
    if "fsdp2" in modes:
        try:
            import_fsdp2()
            import torch.distributed as dist
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
            if args.device.startswith("cuda"):
                device = torch.device(args.device)  # "cuda" names no index: the first GPU
                torch.cuda.set_device(device.index if device.index is not None else 0)
                dist.init_process_group("nccl", rank=0, world_size=1)
            else:  # the CPU check: gloo
                dist.init_process_group("gloo", rank=0, world_size=1)
            pg = True
        except ImportError:
            pass  # run_mode reports fsdp2 as skipped
    try:
        for m in modes:
            run_mode(torch, args, s, m, batches, args.json)
    finally:
        if pg:
            import torch.distributed as dist
            dist.destroy_process_group()
    return 0


# --- tokens: an llm.c token file ---------------------------------------------------------

def cmd_tokens(args):
    import random
    import struct
    from array import array
    n, vocab = args.count, min(args.vocab, TOKEN_LIMIT)
    rng = random.Random(args.seed)
    header = array("i", [20240520, 1, n] + [0] * 253)
    try:
        import numpy as np
        body = np.random.default_rng(args.seed).integers(0, vocab, size=n, dtype=np.uint16).tobytes()
    except ImportError:
        body = array("H", (rng.randrange(vocab) for _ in range(n))).tobytes()
    with open(args.out, "wb") as f:
        f.write(header.tobytes() if sys.byteorder == "little" else struct.pack("<256i", *header))
        f.write(body if sys.byteorder == "little" else array("H", body).byteswap() or body)
    print(f"gpu_torch: {n} random tokens below {vocab} in {args.out}", file=sys.stderr)
    return 0


# --- fsdp-summary: a fsdp train log as a result ------------------------------------------

def read_jsonl(path):
    rows = []
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    return rows


def cmd_fsdp_summary(args):
    s = shape_of(args)
    steps = [r for r in read_jsonl(args.log) if "step" in r and "loss" in r]
    rec = dict(program="fsdp.c", mode=args.mode, model=args.model, shape=s, seq_len=args.seq_len,
               batch_size=args.batch_size, world_size=args.world_size, dtype=args.dtype,
               n_params=count_params(s)[0], flops_per_token=flops_per_token(s, args.seq_len), device=args.device_name)
    timed = [r for r in steps if r["step"] > args.warmup]
    if args.status != "ok" or not timed:
        msg = args.message or (f"{len(steps)} steps logged, none after the {args.warmup} warm-up steps"
                               if args.status == "ok" else "")
        rec.update(status=args.status if args.status != "ok" else "error", message=msg[:500],
                   losses=[r["loss"] for r in steps])
    else:
        ms = statistics.median(r["step_ms"] for r in timed)
        # tokens/s over all ranks: B·T·W per step (fsdp train's own tokens_per_s counts the same)
        rec.update(status="ok", step_ms=ms, tokens_per_s=args.batch_size * args.world_size * args.seq_len / (ms / 1e3),
                   tokens_per_s_logged=statistics.median(r.get("tokens_per_s", 0) for r in timed),
                   peak_alloc_bytes=max(r.get("mem_peak_bytes", 0) for r in steps),
                   steps=len(timed), warmup=args.warmup, first_loss=steps[0]["loss"], last_loss=steps[-1]["loss"],
                   losses=[r["loss"] for r in steps], grad_norms=[r.get("grad_norm") for r in steps])
    with open(args.json, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps({k: v for k, v in rec.items() if k not in ("shape", "losses", "grad_norms")}))
    return 0


# --- report ------------------------------------------------------------------------------

def peak_for(name, override):
    if override:
        return override * 1e12, f"{override:g} TFLOP/s (given)"
    n = (name or "").upper()
    if "H100" in n and "PCIE" in n:
        return 756e12, "756 TFLOP/s (H100 PCIe, bf16 dense)"
    if "H100" in n or "H200" in n or "GH200" in n:
        return 989e12, "989 TFLOP/s (H100 SXM / H200, bf16 dense)"
    if "A100" in n:
        return 312e12, "312 TFLOP/s (A100, bf16 dense)"
    return None, "unknown for this device: MFU left out (give --peak-tflops)"


def fmt_bytes(b):
    return f"{b / 2**30:.2f}" if b else "-"


def cmd_report(args):
    rows = [r for r in read_jsonl(args.results) if "program" in r and r.get("world_size", 1) == 1]
    lines = []
    devs = sorted({r.get("device") for r in rows if r.get("device") and r.get("device") != "cpu"})
    peak, peak_text = peak_for(devs[0] if devs else "", args.peak_tflops)
    lines.append(f"Device: {', '.join(devs) or 'cpu'}; MFU against {peak_text}.")
    lines.append("FLOPs per token = 6·N + 12·L·C·T (PaLM; N: parameters in matrix products).")
    lines.append("")
    for model in sorted({r["model"] for r in rows}, key=lambda m: list(PRESETS).index(m) if m in PRESETS else 99):
        mr = [r for r in rows if r["model"] == model]
        r0 = next((r for r in mr if "flops_per_token" in r), mr[0])
        T = r0["seq_len"]
        fpt = r0.get("flops_per_token") or (flops_per_token(PRESETS[model], T) if model in PRESETS else 0)
        n_params = r0.get("n_params") or (count_params(PRESETS[model])[0] if model in PRESETS else 0)
        lines.append(f"### {model}: {n_params / 1e6:.1f}M parameters, T={T}, {r0.get('dtype', 'bf16')}, "
                     f"{fpt / 1e9:.3f} GFLOP per token")
        lines.append("")
        lines.append("| program | B | status | tokens/s | step ms | MFU | peak GiB (alloc) | peak GiB (reserved) |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        key = lambda r: (r["program"] != "fsdp.c", r["program"] + " " + r.get("mode", ""), r["batch_size"])  # noqa
        for r in sorted(mr, key=key):
            label = r["program"] if r["program"] == "fsdp.c" else f"torch {r['mode']}"
            if r["status"] == "ok":
                mfu = f"{100 * fpt * r['tokens_per_s'] / peak:.1f}%" if peak and fpt else "-"
                lines.append(f"| {label} | {r['batch_size']} | ok | {r['tokens_per_s']:,.0f} | {r['step_ms']:.1f} | "
                             f"{mfu} | {fmt_bytes(r.get('peak_alloc_bytes'))} | "
                             f"{fmt_bytes(r.get('peak_reserved_bytes'))} |")
            else:
                msg = (r.get("message") or "").replace("|", "/")[:80]
                lines.append(f"| {label} | {r['batch_size']} | {r['status']}: {msg} | | | | | |")
        lines.append("")
        best = {}
        for r in mr:
            if r["status"] == "ok":
                label = r["program"] if r["program"] == "fsdp.c" else f"torch {r['mode']}"
                if label not in best or r["tokens_per_s"] > best[label]["tokens_per_s"]:
                    best[label] = r
        if best:
            ref = best.get("fsdp.c")
            lines.append("Best batch of each:")
            lines.append("")
            lines.append("| program | best B | tokens/s | MFU | fsdp.c ÷ this |")
            lines.append("| --- | --- | --- | --- | --- |")
            for label, r in sorted(best.items(), key=lambda kv: (kv[0] != "fsdp.c", kv[0])):
                mfu = f"{100 * fpt * r['tokens_per_s'] / peak:.1f}%" if peak else "-"
                ratio = f"{ref['tokens_per_s'] / r['tokens_per_s']:.2f}" if ref else "-"
                lines.append(f"| {label} | {r['batch_size']} | {r['tokens_per_s']:,.0f} | {mfu} | {ratio} |")
            lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(text + "\n")
    return 0


def cmd_scaling(args):
    runs = {}
    for spec in args.logs:
        w, _, path = spec.partition("=")
        runs[int(w)] = [r for r in read_jsonl(path) if "step" in r and "loss" in r]
    lines = ["### Loss and grad-norm trajectories: W ranks against W=1 " + (args.title or ""), "",
             "| W | steps | first loss | last loss | max abs Δloss vs W=1 | max rel Δgrad norm vs W=1 | tokens/s | "
             "peak MiB/rank |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    base = runs.get(1, [])
    for w in sorted(runs):
        r = runs[w]
        if not r:
            lines.append(f"| {w} | 0 | no steps logged | | | | | |")
            continue
        dl = dg = "-"
        if base and w != 1:
            n = min(len(base), len(r))
            dl = f"{max(abs(a['loss'] - b['loss']) for a, b in zip(base[:n], r[:n])):.3g}"
            gn = [abs(a["grad_norm"] - b["grad_norm"]) / max(abs(a["grad_norm"]), 1e-30)
                  for a, b in zip(base[:n], r[:n]) if a.get("grad_norm") is not None and b.get("grad_norm") is not None]
            dg = f"{max(gn):.3g}" if gn else "-"
            if n < max(len(base), len(r)):
                dl += f" (first {n} steps)"
        tps = statistics.median(x.get("tokens_per_s", 0) for x in r[len(r) // 4:])
        peak = max(x.get("mem_peak_bytes", 0) for x in r) / 2**20
        lines.append(f"| {w} | {len(r)} | {r[0]['loss']:.4f} | {r[-1]['loss']:.4f} | {dl} | {dg} | {tps:,.0f} | "
                     f"{peak:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        with open(args.markdown, "a") as f:
            f.write(text + "\n")
    return 0


def add_shape(p):
    p.add_argument("--model", default="gpt2", help="an fsdp.c preset: " + ", ".join(PRESETS))
    for k in OVERRIDES:
        p.add_argument("--" + k.replace("_", "-"), type=int, default=None)
    p.add_argument("--seq-len", type=int, default=1024)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="train with PyTorch and append results to --json")
    add_shape(p)
    p.add_argument("--modes", default="eager", help="comma-separated: eager, sdpa, compile, fsdp2")
    p.add_argument("--batch-sizes", default="8", help="tried in order; a batch that runs out of memory ends the list")
    p.add_argument("--steps", type=int, default=10, help="timed steps")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (compilation happens here)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--dtype", choices=("bf16", "fp32"), default="bf16")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--json", required=True)
    p = sub.add_parser("tokens", help="write an llm.c file of random tokens")
    p.add_argument("--out", required=True)
    p.add_argument("--count", type=int, default=1 << 22)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("fsdp-summary", help="turn a fsdp train --log file into a result")
    add_shape(p)
    p.add_argument("--log")
    p.add_argument("--mode", default="bf16")
    p.add_argument("--batch-size", type=int, required=True)
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--status", default="ok")
    p.add_argument("--message", default="")
    p.add_argument("--device-name", default="")
    p.add_argument("--json", required=True)
    p = sub.add_parser("report", help="markdown tables of a results file")
    p.add_argument("--results", required=True)
    p.add_argument("--peak-tflops", type=float, default=None)
    p.add_argument("--markdown")
    p = sub.add_parser("scaling", help="compare W ranks' logs with W=1's")
    p.add_argument("logs", nargs="+", help="W=FILE")
    p.add_argument("--title", default="")
    p.add_argument("--markdown")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    return {"run": cmd_run, "tokens": cmd_tokens, "fsdp-summary": cmd_fsdp_summary, "report": cmd_report,
            "scaling": cmd_scaling}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
