#!/usr/bin/python3
"""PyTorch baseline for `fsdp train`: trains tools/gpt2_torch.GPT2 or
tools/llama_torch.Llama (the same models and math as fsdp.c's GPT-2 and Llama 3) on
byte tokens of a text file with AdamW and global-norm gradient clipping, single
process, on the CPU. --model names one of `fsdp train`'s presets (src/models/registry.c);
--n-layer, --n-head, --n-embd and --vocab-size change its shape.

Prints one line per step (ms, tokens/s) and a summary: the median step time
and tokens/s over the steps after the first --warmup steps (default 1), and the peak
resident set size (RSS) of the process. RSS is not the same quantity as
fsdp.c's mem_peak_bytes (which counts only its tracked allocations): it also
holds the Python interpreter, the torch libraries and the allocator's slack.
The RSS before the model is built is reported too, so the difference can be
read as the training's own footprint.

Threads: --threads sets torch.set_num_threads (ATen's OpenMP pool, which an
OpenMP build of OpenBLAS shares) and --interop-threads (default 1) the
inter-op pool, which training does not use. Which BLAS and OpenMP libraries
the process really loaded, and how the BLAS was built (OpenMP, pthreads or
serial), is read from /proc/self/maps and OpenBLAS itself and printed: a
pthreads OpenBLAS is a second pool of its own (OPENBLAS_NUM_THREADS threads)
that fights ATen's OpenMP threads for the cores.

Run with Debian's Python (the one with torch):
    /usr/bin/python3 bench/torch_train.py --data ../shared/data/tinyshakespeare.txt --steps 8
--json FILE writes the summary as one JSON object.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_now_bytes():
    """Current RSS from /proc/self/statm (Linux), or None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def rss_peak_bytes():
    """Peak RSS of this process: VmHWM from /proc/self/status, else getrusage (KiB on Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


OPENBLAS_PARALLEL = {0: "serial", 1: "pthreads", 2: "OpenMP"}  # openblas_get_parallel()


def loaded_libraries(patterns=("blas", "lapack", "gomp", "libomp", "iomp", "mkl")):
    """Paths of the shared libraries this process has mapped whose name holds one of patterns."""
    seen = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            path = fields[5] if len(fields) >= 6 else ""  # anonymous mappings have no path
            name = os.path.basename(path)
            if path.startswith("/") and ".so" in name and any(p in name for p in patterns) and path not in seen:
                seen.append(path)
    return seen


def openblas_info(path):
    """Build and thread settings of a loaded OpenBLAS, or None if path is not one."""
    import ctypes
    try:
        lib = ctypes.CDLL(path)  # already mapped: the same handle, nothing new is loaded
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return {"path": os.path.realpath(path), "parallel": OPENBLAS_PARALLEL.get(lib.openblas_get_parallel(), "?"),
                "num_threads": lib.openblas_get_num_threads(), "core": lib.openblas_get_corename().decode()}
    except (OSError, AttributeError):
        return None


def runtime_info(torch):
    """What decides the threads: env, torch's two pools, the BLAS and OpenMP runtimes loaded."""
    libs = loaded_libraries()
    blas = [i for i in (openblas_info(p) for p in libs if "openblas" in os.path.basename(p)) if i]
    return {
        "env": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                              "OMP_WAIT_POLICY", "LD_LIBRARY_PATH", "ATEN_CPU_CAPABILITY",
                                              "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")},
        # ATen's vector kernels' instruction set (ATEN_CPU_CAPABILITY caps it).
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_num_threads": torch.get_num_threads(),
        "torch_num_interop_threads": torch.get_num_interop_threads(),
        "parallel_backend": next((l.split(":", 1)[1].strip() for l in torch.__config__.parallel_info().splitlines()
                                  if l.startswith("ATen parallel backend")), "?"),
        "openblas": list({i["path"]: i for i in blas}.values()),  # libblas.so.3 and libopenblas.so.0 may be one file
        "libraries": [os.path.realpath(p) for p in libs],
    }


def gpt2_preset(n_layer, n_head, n_embd, vocab_size):
    return {"family": "gpt2", "n_layer": n_layer, "n_head": n_head, "n_embd": n_embd, "vocab_size": vocab_size}


# The presets of src/models/registry.c that the CPU benchmarks train (a GPT-2's positions:
# --block-size).
PRESETS = {
    "shakespeare-char": gpt2_preset(6, 6, 384, 256),
    "gpt2": gpt2_preset(12, 12, 768, 50257),
    "llama3-debug": {"family": "llama3", "n_layer": 6, "n_head": 16, "n_kv_head": 16, "n_embd": 256,
                     "ffn_hidden": 768, "vocab_size": 2048, "max_seq_len": 2048, "norm_eps": 1e-5,
                     "rope_theta": 500000.0, "rope_factor": 8.0, "rope_low_freq_factor": 1.0,
                     "rope_high_freq_factor": 4.0, "rope_original_max_seq_len": 8192, "tied": False},
}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(PRESETS), default="shakespeare-char")
    p.add_argument("--n-layer", type=int, default=None, help="default: the preset's")
    p.add_argument("--n-head", type=int, default=None, help="default: the preset's")
    p.add_argument("--n-embd", type=int, default=None, help="default: the preset's")
    p.add_argument("--vocab-size", type=int, default=None, help="default: the preset's")
    p.add_argument("--block-size", type=int, default=None, help="max_seq_len of a GPT-2 (default: --seq-len)")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=1, help="first steps left out of the medians (default 1)")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads (default: all cores)")
    p.add_argument("--interop-threads", type=int, default=1,
                   help="torch.set_num_interop_threads (default 1: training uses no inter-op parallelism)")
    p.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "tinyshakespeare.txt"), help="text file, one token per byte")
    p.add_argument("--val-fraction", type=float, default=0.1, help="last fraction of the tokens left out, as ours")
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--grad-clip", type=float, default=1.0, help="0 disables")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--compile", action="store_true", help="torch.compile the model (its first steps compile)")
    p.add_argument("--autocast-bf16", action="store_true",
                   help="forward and loss under torch.autocast('cpu', torch.bfloat16): bf16 products, fp32 weights")
    p.add_argument("--json", default=None, help="write the summary as one JSON object to this file")
    p.add_argument("--quiet", action="store_true", help="no per-step lines")
    return p.parse_args(argv)


def model_config(args):
    """The preset's fields, with the shape flags given in their place."""
    c = dict(PRESETS[args.model])
    for field in ("n_layer", "n_head", "n_embd", "vocab_size"):
        if getattr(args, field) is not None:
            c[field] = getattr(args, field)
    return c


def build_model(c, args):
    if c["family"] == "llama3":
        from llama_torch import Llama
        return Llama(c)
    from gpt2_torch import GPT2
    return GPT2(c["n_layer"], c["n_head"], c["n_embd"], c["vocab_size"], args.block_size or args.seq_len)


def run(args):
    rss_before = rss_now_bytes()
    import torch  # imported here so that --help works without torch

    sys.path.insert(0, os.path.join(ROOT, "tools"))
    config = model_config(args)

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.interop_threads)  # only before any inter-op work starts
    torch.manual_seed(args.seed)
    T, B = args.seq_len, args.batch_size

    with open(args.data, "rb") as f:
        raw = f.read()
    n_train = len(raw) - int(len(raw) * args.val_fraction)
    data = torch.frombuffer(bytearray(raw[:n_train]), dtype=torch.uint8).long()
    if int(data.max()) >= config["vocab_size"]:
        sys.exit(f"token {int(data.max())} >= the vocabulary's {config['vocab_size']}")
    if data.numel() < T + 1:
        sys.exit("data shorter than --seq-len + 1")

    rss_after_import = rss_now_bytes()
    model = build_model(config, args)
    model.train()
    opt = model.optimizer(args.lr, (args.beta1, args.beta2), args.eps, args.weight_decay)
    forward = torch.compile(model) if args.compile else model
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast_bf16)
    n_params = sum(p.numel() for p in model.parameters())
    gen = torch.Generator().manual_seed(args.seed)
    offsets = torch.arange(T + 1)

    steps = []
    for step in range(1, args.steps + 1):
        starts = torch.randint(0, data.numel() - T - 1 + 1, (B,), generator=gen)
        chunk = data[starts[:, None] + offsets]
        x, y = chunk[:, :-1], chunk[:, 1:]
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast:
            _, loss = forward(x, y)
        loss.backward()
        if args.grad_clip > 0:
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        else:
            gnorm = torch.sqrt(sum((p.grad.float() ** 2).sum() for p in model.parameters()))
        opt.step()
        lossv = loss.item()
        ms = (time.perf_counter() - t0) * 1e3
        rec = {"step": step, "loss": lossv, "grad_norm": float(gnorm), "step_ms": ms,
               "tokens_per_s": B * T / (ms / 1e3)}
        steps.append(rec)
        if not args.quiet:
            print(f"step {step:5d}/{args.steps} | loss {lossv:.4f} | grad norm {float(gnorm):.4f} | "
                  f"{ms:.1f} ms | {rec['tokens_per_s']:.0f} tok/s", flush=True)

    timed = steps[args.warmup:] or steps
    summary = {
        "impl": "pytorch",
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "compile": args.compile, "autocast_bf16": args.autocast_bf16,
        "model": args.model, "family": config["family"], "n_layer": config["n_layer"], "n_head": config["n_head"],
        "n_embd": config["n_embd"], "vocab_size": config["vocab_size"],
        "seq_len": T, "batch_size": B, "steps": args.steps, "warmup": args.warmup, "n_params": n_params,
        "median_step_ms": statistics.median(r["step_ms"] for r in timed),
        "median_tokens_per_s": statistics.median(r["tokens_per_s"] for r in timed),
        "rss_peak_bytes": rss_peak_bytes(),
        "rss_before_torch_bytes": rss_before,
        "rss_after_import_bytes": rss_after_import,
        "runtime": runtime_info(torch),
        "steps_log": steps,
    }
    return summary


def main(argv=None):
    args = parse_args(argv)
    s = run(args)
    mib = 1 << 20
    print(f"pytorch {s['torch_version']} | {s['threads']} threads | params {s['n_params']} | "
          f"B={s['batch_size']} T={s['seq_len']} | median over steps {s['warmup'] + 1}..{s['steps']}: "
          f"{s['median_step_ms']:.1f} ms/step, {s['median_tokens_per_s']:.0f} tok/s | "
          f"peak RSS {s['rss_peak_bytes'] / mib:.1f} MiB "
          f"(RSS after importing torch and reading data: {s['rss_after_import_bytes'] / mib:.1f} MiB)")
    rt = s["runtime"]
    blas = ", ".join(f"{b['path']} ({b['parallel']} build, {b['num_threads']} threads, {b['core']} kernels)"
                     for b in rt["openblas"]) or "no OpenBLAS loaded"
    print(f"threads: torch {rt['torch_num_threads']} intra-op ({rt['parallel_backend']}), "
          f"{rt['torch_num_interop_threads']} inter-op | BLAS: {blas} | "
          f"env: {' '.join(f'{k}={v}' for k, v in rt['env'].items() if v is not None) or 'none set'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f)
    return s


if __name__ == "__main__":
    main()
