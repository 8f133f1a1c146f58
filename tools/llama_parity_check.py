"""Checks fsdp.c's Llama 3 against PyTorch (tools/parity.py, llama_torch.py): first its
initial weights against torchtitan's rules, as torch's own init draws them (the same
distributions, not the same draws: fsdp.c's come from Philox), then the logits, loss,
gradients and AdamW trajectory.
Usage: llama_parity_check.py DUMP.bin"""
import sys

import torch

from llama_torch import Llama
from parity import Parity

# A tensor's sample standard deviation is off its true one by about 1 / sqrt(2 n): 2.6%
# for the smallest matrix here (768 values), 3.6% between two samples. 15% leaves four
# of those and still tells the rules apart: depth scaling takes 0.02 to 0.02 / sqrt(2)
# in block 0 and to 0.01 in block 1, 29% each time.
STD_TOL = 0.15


def check_init(parity, model):
    torch.manual_seed(0)
    model.init_like_torchtitan()
    for name, p in model.fsdp_named_parameters():
        ours, rule = parity.initial(name), model.init_rule(name)
        if rule[0] == "ones":
            ok, what = bool((ours == 1).all()), "all ones"
        else:
            ratio = ours.std().item() / p.std().item()
            within = rule[0] != "trunc_normal" or ours.abs().max().item() <= rule[2]
            ok = abs(ratio - 1) <= STD_TOL and within
            what = f"std {ours.std().item():.4g}, torch's {p.std().item():.4g}" + (
                f", max |x| {ours.abs().max().item():.4g} within {rule[2]:.4g}" if rule[0] == "trunc_normal" else "")
        print(f"init {name:36s} {rule[0]:12s} {what}")
        if not ok:
            parity.failures.append(f"init {name}: {what}, not torchtitan's {rule}")


def main(path):
    parity = Parity(path)
    model = Llama(parity.config)
    check_init(parity, model)
    parity.run(model)
    return parity.finish("llama3")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
