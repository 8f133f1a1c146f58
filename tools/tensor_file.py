"""Reads the named float32 tensors that fsdp.c's tests write (tests/tensor_file.h)."""
import struct

import numpy as np


def read_tensors(path):
    tensors = {}
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos < len(data):
        (name_len,) = struct.unpack_from("<i", data, pos)
        pos += 4
        name = data[pos:pos + name_len].decode()
        pos += name_len
        (ndim,) = struct.unpack_from("<i", data, pos)
        pos += 4
        dims = struct.unpack_from(f"<{ndim}i", data, pos)
        pos += 4 * ndim
        count = int(np.prod(dims)) if ndim else 1
        tensors[name] = np.frombuffer(data, dtype="<f4", count=count, offset=pos).reshape(dims).copy()
        pos += 4 * count
    return tensors
