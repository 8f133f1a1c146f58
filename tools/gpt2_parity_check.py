"""Checks fsdp.c's GPT-2 against PyTorch (tools/parity.py, gpt2_torch.py).
Usage: gpt2_parity_check.py DUMP.bin"""
import sys

from gpt2_torch import GPT2
from parity import Parity


def main(path):
    parity = Parity(path)
    c = parity.config
    parity.run(GPT2(c["n_layer"], c["n_head"], c["n_embd"], c["vocab_size"], c["max_seq_len"]))
    return parity.finish("gpt2")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
