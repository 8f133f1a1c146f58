"""Checks fsdp.c's GPT-2 against PyTorch: loads the initial weights and batches
that tests/gpt2_parity_dump.c wrote, and compares the logits, the loss, every
parameter gradient, and the losses and grad norms of 10 clipped AdamW steps.
Usage: gpt2_parity_check.py DUMP.bin"""
import sys

import torch

from gpt2_torch import GPT2
from tensor_file import read_tensors

# fp32 on both sides, different summation orders: ~1e-6 relative per op, a few
# ops deep. Gradients are compared relative to the largest entry of each tensor.
LOGITS_TOL, GRAD_TOL, LOSS_TOL = 1e-4, 1e-4, 1e-4


def main(path):
    t = read_tensors(path)
    n_layer, n_head, n_embd, vocab, max_seq, lr, beta1, beta2, eps, wd, clip = t["config"].tolist()
    model = GPT2(int(n_layer), int(n_head), int(n_embd), int(vocab), int(max_seq))
    with torch.no_grad():
        for name, p in model.fsdp_named_parameters():
            p.copy_(torch.from_numpy(t[name]))
    inputs = torch.from_numpy(t["inputs"]).long()
    targets = torch.from_numpy(t["targets"]).long()
    failures = []

    def compare(what, ours, theirs, tol):
        scale = max(theirs.abs().max().item(), 1e-6)
        err = (ours - theirs).abs().max().item() / scale
        print(f"{what:40s} max error {err:.2e} (relative to {scale:.3g})")
        if not err <= tol:
            failures.append(f"{what}: error {err:.3g} above {tol}")

    logits, loss = model(inputs[0], targets[0])
    loss.backward()
    compare("logits", torch.from_numpy(t["logits"]), logits.detach(), LOGITS_TOL)
    compare("loss", torch.tensor(t["losses"][0]), loss.detach(), LOSS_TOL)
    for name, p in model.fsdp_named_parameters():
        compare("grad " + name, torch.from_numpy(t["grad." + name]), p.grad, GRAD_TOL)

    model.zero_grad()
    optimizer = model.optimizer(lr, (beta1, beta2), eps, wd)
    for step in range(inputs.shape[0]):
        optimizer.zero_grad()
        _, loss = model(inputs[step], targets[step])
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        compare(f"step {step} loss", torch.tensor(t["losses"][step]), loss.detach(), LOSS_TOL)
        compare(f"step {step} grad norm", torch.tensor(t["grad_norms"][step]), norm, LOSS_TOL)

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"gpt2 parity with PyTorch {torch.__version__}: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
