"""Checks one of fsdp.c's models against its PyTorch oracle: loads the config, the
initial weights and the batches that tests/parity_dump.c wrote, and compares the logits,
the loss, every parameter gradient, and the losses and grad norms of 10 clipped AdamW
steps. gpt2_parity_check.py and llama_parity_check.py build the oracles.

With 16-bit parameters fsdp.c computes in that dtype, and so does the reference: the
same model under fsdp.c's dtype contract (dtype_contract.py: every value fsdp.c stores in
16 bits rounded where fsdp.c rounds it, fp32 math between), run from the fp32 master
weights rounded to the dtype, fp32 master weights and AdamW, as in fsdp.c."""
import math

import torch

from dtype_contract import Contract16
from tensor_file import read_tensors

# fp32 on both sides, different summation orders: ~1e-6 relative per op, a few
# ops deep. Gradients are compared relative to the largest entry of each tensor.
LOGITS_TOL, GRAD_TOL, LOSS_TOL = 1e-4, 1e-4, 1e-4

# 16-bit compute. Both sides round the same values at the same points, but each
# computes them in fp32 in its own order (oneDNN's products against PyTorch's, glibc's
# vector tanhf against PyTorch's tanh), so now and then a value lands on the other side
# of a rounding boundary and the two stored values differ by one ulp of the dtype: 2u
# relative, u the dtype's unit roundoff (2^-8 for bf16's 8 significant bits, 2^-11 for
# fp16's 11). That difference travels down the rest of the computation and makes later
# roundings differ too: a value at the end of a chain of n roundings differs by their
# accumulated effect. In the worst case that is n u, but rounding errors behave as
# independent and of mean zero, and grow as sqrt(n) u (Higham and Mary, "A new approach
# to probabilistic rounding error analysis", SIAM J. Sci. Comput. 41(5), 2019). So a
# value at the end of n roundings is compared within sqrt(n) u of its tensor's largest
# entry: the logits at the end of the forward's chain, every gradient at the end of the
# whole chain (the checkers count both for their model). Measured: GPT-2's gradients
# within 0.6 u (bf16) and 1.1 u (fp16) of the reference; two references that differ only
# in computing between the roundings in fp32 or in fp64 disagree by as much (1.9 u, 1.4 u)
# and at as many elements, so what is left is rounding, not a difference of math.
UNIT_ROUNDOFF = {1: 2.0**-8, 2: 2.0**-11}
# The loss is an fp32 mean of per-token losses computed in fp32 from the logits, which
# agree bit for bit but for a few one-ulp flips: each moves its token's loss by less
# than one ulp of the logit, divided by the N tokens of the mean. So the loss keeps
# fp32's LOSS_TOL (measured: 1.3e-6 relative in bf16, 2e-7 in fp16).
#
# The AdamW steps: AdamW divides each gradient by its own running magnitude, so an
# element whose gradient rounding noise can flip in sign takes a full step of lr one way
# on one side and the other way on the other, and two honest 16-bit runs drift apart
# step after step (by up to 1.4e-3 in GPT-2's grad norm over 10 bf16 steps, measured
# between the fp32 and fp64 references): chaos, which no count of roundings bounds. So
# the reference follows fsdp.c's own steps instead: each step's forward and backward
# from the reference's master weights, compared with fsdp.c's step as the first step is
# (the loss within LOSS_TOL, every gradient within sqrt(n) u); fsdp.c's grad norm that of
# its own gradients, within NORM_TOL (one sum of squares, in fp64 on both sides); and
# then the AdamW step taken with fsdp.c's gradients, so that the master weights of both
# sides see the same gradients and stay within fp32's rounding of each other: after the
# 10 steps, within WEIGHTS_TOL of each tensor's largest entry (AdamW's fp32 arithmetic in
# another order, ~1e-7 a step, measured 1e-7 over 10 steps).
NORM_TOL, WEIGHTS_TOL = 1e-6, 1e-5
TORCH_DTYPE = {1: torch.bfloat16, 2: torch.float16}
# struct model_config's fields, in the order parity_dump.c writes them.
CONFIG_FIELDS = ["n_layer", "n_head", "n_kv_head", "n_embd", "vocab_size", "max_seq_len", "ffn_hidden", "norm_eps",
                 "rope_theta", "rope_factor", "rope_low_freq_factor", "rope_high_freq_factor",
                 "rope_original_max_seq_len", "tied"]
FLOAT_FIELDS = {"norm_eps", "rope_theta", "rope_factor", "rope_low_freq_factor", "rope_high_freq_factor"}


class Parity:
    def __init__(self, path):
        self.t = read_tensors(path)
        self.config = {name: value if name in FLOAT_FIELDS else int(value)
                       for name, value in zip(CONFIG_FIELDS, self.t["config"].tolist())}
        self.lr, beta1, beta2, self.eps, self.wd, self.clip, dtype = self.t["train"].tolist()
        self.betas, self.dtype = (beta1, beta2), int(dtype)
        self.failures = []

    @staticmethod
    def error(ours, theirs):
        """The largest difference relative to theirs's largest entry, and that entry."""
        scale = max(theirs.abs().max().item(), 1e-6)
        return (ours - theirs).abs().max().item() / scale, scale

    def check(self, what, err, tol):
        if not err <= tol:
            self.failures.append(f"{what}: error {err:.3g} above {tol:.3g}")

    def compare(self, what, ours, theirs, tol):
        err, scale = self.error(ours, theirs)
        print(f"{what:40s} max error {err:.2e} (relative to {scale:.3g})")
        self.check(what, err, tol)

    def initial(self, name):
        return torch.from_numpy(self.t[name])

    def run(self, model, chain):
        """Loads the initial weights into model (fsdp_named_parameters) and compares.
        chain: (forward, whole), the most roundings of a 16-bit value on the way from
        the weights to the logits, and to a parameter's gradient."""
        t, dtype = self.t, self.dtype
        if dtype:
            model.compute_in(Contract16(TORCH_DTYPE[dtype]))
            logits_tol, grad_tol = (math.sqrt(n) * UNIT_ROUNDOFF[dtype] for n in chain)
            print(f"{TORCH_DTYPE[dtype]} compute: logits within sqrt({chain[0]}) u = {logits_tol:.3g}, "
                  f"gradients within sqrt({chain[1]}) u = {grad_tol:.3g}")
        else:
            logits_tol, grad_tol = LOGITS_TOL, GRAD_TOL
        with torch.no_grad():
            for name, p in model.fsdp_named_parameters():
                p.copy_(self.initial(name))
        inputs = torch.from_numpy(t["inputs"]).long()
        targets = torch.from_numpy(t["targets"]).long()

        def round_to_dtype(x):
            return x.to(TORCH_DTYPE[dtype]).to(x.dtype) if dtype else x

        # fsdp.c's fp32 master weights live in `master`; each forward runs `model` from their rounded copy.
        master = [p.detach().clone() for p in model.parameters()]

        def forward_backward(step):
            with torch.no_grad():
                for p, w in zip(model.parameters(), master):
                    p.copy_(round_to_dtype(w))
            model.zero_grad()
            logits, loss = model(inputs[step], targets[step])
            loss.backward()
            return logits, loss

        logits, loss = forward_backward(0)
        self.compare("logits", torch.from_numpy(t["logits"]), logits.detach(), logits_tol)
        self.compare("loss", torch.tensor(t["losses"][0]), loss.detach(), LOSS_TOL)
        for name, p in model.fsdp_named_parameters():
            self.compare("grad " + name, torch.from_numpy(t["grad." + name]), round_to_dtype(p.grad), grad_tol)

        master = [torch.nn.Parameter(w) for w in master]
        optimizer = model.optimizer(self.lr, self.betas, self.eps, self.wd, params=master)
        if dtype:
            self.follow_steps(model, master, optimizer, forward_backward, grad_tol)
            return
        for step in range(inputs.shape[0]):
            _, loss = forward_backward(step)
            for w, p in zip(master, model.parameters()):
                w.grad = p.grad
            norm = torch.nn.utils.clip_grad_norm_(master, self.clip)
            optimizer.step()
            self.compare(f"step {step} loss", torch.tensor(t["losses"][step]), loss.detach(), LOSS_TOL)
            self.compare(f"step {step} grad norm", torch.tensor(t["grad_norms"][step]), norm, LOSS_TOL)

    def follow_steps(self, model, master, optimizer, forward_backward, grad_tol):
        """The 16-bit AdamW steps, each from fsdp.c's gradients (above)."""
        t = self.t
        name_of = {id(p): name for name, p in model.fsdp_named_parameters()}
        names = [name_of[id(p)] for p in model.parameters()]
        for step in range(len(t["losses"])):
            _, loss = forward_backward(step)
            self.compare(f"step {step} loss", torch.tensor(t["losses"][step]), loss.detach(), LOSS_TOL)
            prefix = "grad." if step == 0 else f"step{step}.grad."
            ours = [torch.from_numpy(t[prefix + name]) for name in names]
            errors = [(self.error(g, p.grad.to(TORCH_DTYPE[self.dtype]).float())[0], name)
                      for g, p, name in zip(ours, model.parameters(), names)]
            err, name = max(errors)
            print(f"{f'step {step} gradients':40s} max error {err:.2e} ({name})")
            self.check(f"step {step} grad {name}", err, grad_tol)
            norm = torch.cat([g.double().flatten() for g in ours]).norm()
            self.compare(f"step {step} grad norm (of its gradients)", torch.tensor(t["grad_norms"][step]).double(),
                         norm, NORM_TOL)
            for w, g in zip(master, ours):
                w.grad = g.clone()
            torch.nn.utils.clip_grad_norm_(master, self.clip)
            optimizer.step()
        for w, name in zip(master, names):
            self.compare("weights after the steps: " + name, torch.from_numpy(t["final." + name]), w.detach(),
                         WEIGHTS_TOL)

    def finish(self, model_name):
        """The exit status: 1 after listing the failures, 0 when there are none."""
        if self.failures:
            print("FAILED:\n  " + "\n  ".join(self.failures))
            return 1
        print(f"{model_name} parity with PyTorch {torch.__version__}: all checks passed")
        return 0
