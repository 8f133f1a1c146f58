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


def rounding_chain(n_layer):
    """The most 16-bit roundings on the way to the logits, and to a gradient (parity.py):
    forward, the embedding's rows, then in each block the attention norm, q, q rotated,
    attention's out, wo's output, the residual, the FFN norm, the gate, SwiGLU, w2's
    output and the residual (11), then the final norm and the logits; backward, the
    probabilities, the logits' gradient, the final norm's input gradient and the
    residual's, then in each block the gradients of SwiGLU's output and the gate, the
    FFN norm's output (w1's and w3's products added to it, a rounding each), the residual
    (added to), attention's out, q, q before RoPE, the attention norm's output (wq's, wk's
    and wv's added) and the residual again (12), and last a tied embedding's gradient,
    rounded twice (the head's product, then the lookup's rows)."""
    forward = 1 + 11 * n_layer + 2
    return forward, forward + 4 + 12 * n_layer + 2


def main(path):
    parity = Parity(path)
    model = Llama(parity.config)
    check_init(parity, model)
    parity.run(model, rounding_chain(parity.config["n_layer"]))
    return parity.finish("llama3")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
