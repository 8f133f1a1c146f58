"""Checks one of fsdp.c's models against its PyTorch oracle: loads the config, the
initial weights and the batches that tests/parity_dump.c wrote, and compares the logits,
the loss, every parameter gradient, and the losses and grad norms of 10 clipped AdamW
steps. gpt2_parity_check.py and llama_parity_check.py build the oracles.

With 16-bit parameters, the reference is the same fp32 model run from the
weights rounded to that dtype and upcast (fp32 master weights and AdamW, as in
fsdp.c), with its gradients rounded to the dtype too."""
import torch

from tensor_file import read_tensors

# fp32 on both sides, different summation orders: ~1e-6 relative per op, a few
# ops deep. Gradients are compared relative to the largest entry of each tensor.
LOGITS_TOL, GRAD_TOL, LOSS_TOL = 1e-4, 1e-4, 1e-4
# With 16-bit parameters both sides compute in fp32 from identical rounded
# weights, so the logits and the first loss keep the fp32 tolerances. fsdp.c's
# gradients are its fp32 gradients rounded to the dtype: each differs from the
# reference's by at most half an ulp of the dtype on top of the fp32 error, that
# is by ROUNDING of the element: 2^-8 for bf16's 8 significant bits, 2^-11 for
# fp16's 11. Over the AdamW steps the fp32 master weights
# agree to ~1e-6, but a weight that close to a rounding midpoint of the dtype
# rounds the other way and moves by one ulp; a handful of such weights shift the
# loss and norm by far less than STEPS_TOL.
ROUNDING = {1: 2.0**-8, 2: 2.0**-11}
STEPS_TOL_16BIT = 1e-3
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

    def compare(self, what, ours, theirs, tol, rounding=0.0):
        scale = max(theirs.abs().max().item(), 1e-6)
        excess = ((ours - theirs).abs() - rounding * theirs.abs()).clamp(min=0.0)
        err = excess.max().item() / scale
        print(f"{what:40s} max error {err:.2e} (relative to {scale:.3g})")
        if not err <= tol:
            self.failures.append(f"{what}: error {err:.3g} above {tol}")

    def initial(self, name):
        return torch.from_numpy(self.t[name])

    def run(self, model):
        """Loads the initial weights into model (fsdp_named_parameters) and compares."""
        t, dtype = self.t, self.dtype
        with torch.no_grad():
            for name, p in model.fsdp_named_parameters():
                p.copy_(self.initial(name))
        inputs = torch.from_numpy(t["inputs"]).long()
        targets = torch.from_numpy(t["targets"]).long()

        def round_to_dtype(x):
            return x.to(TORCH_DTYPE[dtype]).float() if dtype else x

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
        self.compare("logits", torch.from_numpy(t["logits"]), logits.detach(), LOGITS_TOL)
        self.compare("loss", torch.tensor(t["losses"][0]), loss.detach(), LOSS_TOL)
        for name, p in model.fsdp_named_parameters():
            self.compare("grad " + name, torch.from_numpy(t["grad." + name]), p.grad, GRAD_TOL,
                         ROUNDING.get(dtype, 0.0))

        master = [torch.nn.Parameter(w) for w in master]
        optimizer = model.optimizer(self.lr, self.betas, self.eps, self.wd, params=master)
        steps_tol = STEPS_TOL_16BIT if dtype else LOSS_TOL
        for step in range(inputs.shape[0]):
            _, loss = forward_backward(step)
            for w, p in zip(master, model.parameters()):
                w.grad = round_to_dtype(p.grad)
            norm = torch.nn.utils.clip_grad_norm_(master, self.clip)
            optimizer.step()
            self.compare(f"step {step} loss", torch.tensor(t["losses"][step]), loss.detach(), steps_tol)
            self.compare(f"step {step} grad norm", torch.tensor(t["grad_norms"][step]), norm, steps_tol)

    def finish(self, model_name):
        """The exit status: 1 after listing the failures, 0 when there are none."""
        if self.failures:
            print("FAILED:\n  " + "\n  ".join(self.failures))
            return 1
        print(f"{model_name} parity with PyTorch {torch.__version__}: all checks passed")
        return 0
