"""Checks fsdp.c's dtype conversions (src/core/dtype.c) against PyTorch's.

Reads what dtype_test wrote: fp32 inputs, their bf16 and fp16 bit patterns as narrowed
by f32_to_bf16 / f32_to_f16, dtype_round's results, and every 16-bit pattern widened
to fp32. Each must equal torch's .to(torch.bfloat16 / torch.float16) (and .float())
bit for bit, except that a NaN need only be a NaN (quiet, where 16-bit): torch writes
one canonical NaN, the C code keeps the payload's leading bits.

usage: scripts/torch-python tests/dtype_check.py dtype.bin
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tensor_file import read_tensors  # noqa: E402

FORMATS = {"bf16": (torch.bfloat16, 0x7F80, 0x0040), "fp16": (torch.float16, 0x7C00, 0x0200)}


def bits16(t):
    return t.view(torch.int16).numpy().astype(np.int64) & 0xFFFF


def bits32(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.int64)


def first_mismatch(bad, inputs, got, want):
    i = int(np.flatnonzero(bad)[0])
    return "%d of %d differ; first: input 0x%08x gives 0x%x, torch 0x%x" % (
        int(bad.sum()), bad.size, inputs[i], got[i], want[i])


def main(path):
    records = read_tensors(path)
    x = records["inputs"]
    x_bits = bits32(x)
    x_nan = np.isnan(x)
    failures = []

    def report(what, bad, inputs, got, want, extra=""):
        status = "FAIL " + first_mismatch(bad, inputs, got, want) if bad.any() else "ok"
        print("%s: %d values %s%s" % (what, bad.size, status, extra))
        if bad.any():
            failures.append(what)

    for name, (dtype, inf, quiet) in FORMATS.items():
        got = records[name + "/narrowed"].astype(np.int64)
        want = bits16(torch.from_numpy(x).to(dtype))
        nan_got = ((got & 0x7FFF) > inf) & ((got & quiet) != 0)
        bad = np.where(x_nan, ~nan_got, got != want)
        report(name + " narrowed", bad, x_bits, got, want, " (%d NaN inputs)" % int(x_nan.sum()))

        rounded = records[name + "/rounded"]
        want = torch.from_numpy(x).to(dtype).float().numpy()
        bad = np.where(x_nan, ~np.isnan(rounded), bits32(rounded) != bits32(want))
        report(name + " dtype_round", bad, x_bits, bits32(rounded), bits32(want))

        patterns = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(dtype)
        widened = records[name + "/widened"]
        want = patterns.float().numpy()
        pattern_nan = np.isnan(want)
        bad = np.where(pattern_nan, ~np.isnan(widened), bits32(widened) != bits32(want))
        report(name + " widened (every pattern)", bad, np.arange(65536), bits32(widened), bits32(want))

    if failures:
        print("dtype_check: FAILED: " + ", ".join(failures))
        return 1
    print("dtype_check: every conversion matches torch")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
