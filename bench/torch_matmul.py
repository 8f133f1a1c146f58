#!/usr/bin/env python3
"""PyTorch's side of bench/cpu_matmul.c: GFLOP/s of the products a linear layer runs
in a training step (forward F.linear with its bias; backward dinp = dout @ W and
dweight = dout^T @ x with the bias gradient, as autograd computes them), on the same
GPT-2 shapes, in fp32 (MKL's sgemm) or bf16 (what autocast runs: oneDNN's bf16
matmul). Prints one line per product and a JSON summary line like cpu_matmul's.

    python bench/torch_matmul.py [--rows N] [--n-embd C] [--n-layer L] [--vocab-size V]
                                 [--dtype fp32|bf16] [--seconds S] [--threads K]
"""
import argparse
import json
import statistics
import time

import torch


def median_seconds(fn, seconds):
    for _ in range(2):
        fn()
    times, start = [], time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < seconds and len(times) < 400):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=2048)
    p.add_argument("--n-embd", type=int, default=384)
    p.add_argument("--n-layer", type=int, default=6)
    p.add_argument("--vocab-size", type=int, default=256)
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--seconds", type=float, default=0.3)
    p.add_argument("--threads", type=int, default=None)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    N, C, L = a.rows, a.n_embd, a.n_layer
    layers = [("qkv", C, 3 * C, L), ("attproj", C, C, L), ("fc", C, 4 * C, L), ("fcproj", 4 * C, C, L),
              ("lm_head", C, a.vocab_size, 1)]
    flop = secs = 0.0
    with torch.no_grad():
        for name, cin, cout, count in layers:
            x, w, b = torch.randn(N, cin, dtype=dt), torch.randn(cout, cin, dtype=dt), torch.randn(cout, dtype=dt)
            dout = torch.randn(N, cout, dtype=dt)
            products = {"forward": lambda: torch.nn.functional.linear(x, w, b),
                        "dinp": lambda: dout @ w,
                        "dweight": lambda: (dout.t() @ x, dout.sum(0))}
            f = 2.0 * N * cin * cout
            for prod, fn in products.items():
                s = median_seconds(fn, a.seconds)
                flop += f * count
                secs += s * count
                print(f"{a.dtype} {name} {prod} ({N} x {cin} -> {cout}): {s * 1e3:.3f} ms, {f / s * 1e-9:.0f} GFLOP/s")
    print(json.dumps({"impl": "pytorch " + torch.__version__, "dtype": a.dtype, "threads": torch.get_num_threads(),
                      "gflop": round(flop * 1e-9, 3), "ms": round(secs * 1e3, 3),
                      "gflops": round(flop / secs * 1e-9, 1)}))


if __name__ == "__main__":
    main()
