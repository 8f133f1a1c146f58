"""PyTorch's scaled_dot_product_attention (causal, grouped-query without repeating k and
v: enable_gqa) forward and backward at one shape, timed as bench/attention.c times
fsdp.c's: the median of REPEATS after a warm-up, synchronized on cuda.
usage: attention_torch.py cpu|cuda fp32|bf16|fp16 B T NH NKV HD REPEATS
On the CPU with OMP_NUM_THREADS threads, as fsdp.c.
prints: forward and backward milliseconds."""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def median_ms(run, device, repeats):
    run()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        run()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    device, dtype = sys.argv[1], DTYPES[sys.argv[2]]
    B, T, NH, NKV, hd, repeats = (int(x) for x in sys.argv[3:9])
    if device == "cpu" and "OMP_NUM_THREADS" in os.environ:
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    torch.manual_seed(0)
    q = torch.randn(B, NH, T, hd, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn(B, NKV, T, hd, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn(B, NKV, T, hd, device=device, dtype=dtype, requires_grad=True)
    dout = torch.randn(B, NH, T, hd, device=device, dtype=dtype)

    def forward():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=NKV != NH)

    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=NKV != NH)

    def backward():
        torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)

    print(f"{median_ms(forward, device, repeats):.3f} {median_ms(backward, device, repeats):.3f}")


if __name__ == "__main__":
    main()
