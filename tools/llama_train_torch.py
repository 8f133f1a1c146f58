"""Trains the PyTorch Llama 3 (llama_torch.py) the way `fsdp train` trains fsdp.c's: from
the initial weights and on the global batches that `parity_dump OUT.bin train FLAGS...`
wrote for the same flags, with AdamW decaying matrices only (fsdp_module.py), global-norm
clipping and the linear-warmup cosine schedule of src/fsdp/schedule.c. Writes one JSON
object per step (step, loss, grad_norm, lr), as `fsdp train --log` does.
Usage: llama_train_torch.py DUMP.bin LOG.jsonl"""
import json
import math
import sys

import numpy as np
import torch

from llama_torch import Llama
from parity import Parity


def lr_warmup_cosine(step, warmup, total, lr, min_lr):
    """src/fsdp/schedule.c's rate for step (from 0), in its float32 and double arithmetic."""
    f32 = np.float32
    lr, min_lr = f32(lr), f32(min_lr)
    if step < warmup:
        return float(lr * f32(step + 1) / f32(warmup + 1))
    if step >= total:
        return float(min_lr)
    coeff = 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / (total - warmup)))
    return float(min_lr + f32(coeff) * (lr - min_lr))


def main(dump, log_path):
    parity = Parity(dump)
    if parity.dtype != 0:
        sys.exit(f"{dump}: parameters in dtype {parity.dtype}, but this reference trains in fp32 only")
    min_lr, warmup, steps = parity.t["schedule"].tolist()
    warmup, steps = int(warmup), int(steps)
    model = Llama(parity.config)
    with torch.no_grad():
        for name, p in model.fsdp_named_parameters():
            p.copy_(parity.initial(name))
    inputs = torch.from_numpy(parity.t["inputs"]).long()
    targets = torch.from_numpy(parity.t["targets"]).long()
    if inputs.shape[0] != steps:
        sys.exit(f"{dump}: {inputs.shape[0]} batches for {steps} steps")
    optimizer = model.optimizer(parity.lr, parity.betas, parity.eps, parity.wd)
    with open(log_path, "w") as log:
        for step in range(steps):
            lr = lr_warmup_cosine(step, warmup, steps, parity.lr, min_lr)
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
            _, loss = model(inputs[step], targets[step])
            loss.backward()
            # fsdp.c clips only with --grad-clip > 0, and logs the norm before clipping either way.
            max_norm = parity.clip if parity.clip > 0 else math.inf
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            optimizer.step()
            record = {"step": step + 1, "loss": loss.item(), "grad_norm": norm.item(), "lr": lr}
            log.write(json.dumps(record) + "\n")
            if (step + 1) % 50 == 0 or step == 0:
                print(f"torch step {step + 1:4d}/{steps} | loss {record['loss']:.4f} | "
                      f"grad norm {record['grad_norm']:.4f} | lr {lr:.3e}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
