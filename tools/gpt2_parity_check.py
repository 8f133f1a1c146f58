"""Checks fsdp.c's GPT-2 against PyTorch (tools/parity.py, gpt2_torch.py).
Usage: gpt2_parity_check.py DUMP.bin"""
import sys

from gpt2_torch import GPT2
from parity import Parity


def rounding_chain(n_layer):
    """The most 16-bit roundings on the way to the logits, and to a gradient (parity.py):
    forward, the embedding's sum, then in each block ln1, qkv, attention's out, its
    projection, the residual, ln2, fc, GELU, the MLP's projection and the residual (10),
    then the final LayerNorm and the logits; backward, the probabilities, the logits'
    gradient, the final LayerNorm's input gradient and the residual's, then in each block
    the gradients of GELU's output, fc's output, ln2's output, the residual (added to),
    attention's out, qkv, ln1's output and the residual again (8), and last the tied
    embedding's gradient, rounded twice (the head's product, then the lookup's rows)."""
    forward = 1 + 10 * n_layer + 2
    return forward, forward + 4 + 8 * n_layer + 2


def main(path):
    parity = Parity(path)
    c = parity.config
    parity.run(GPT2(c["n_layer"], c["n_head"], c["n_embd"], c["vocab_size"], c["max_seq_len"]),
               rounding_chain(c["n_layer"]))
    return parity.finish("gpt2")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
