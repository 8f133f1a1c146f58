"""PyTorch FSDP2's side of bench/fsdp2_llama.sh: one rank of tools/llama_torch.Llama under
torch.distributed.fsdp.fully_shard (each block, then the root), on the CPU over gloo in
fp32, trained from the initial weights and on the global batches that `parity_dump
OUT.bin train FLAGS...` wrote for `fsdp train`'s flags, with fsdp.c's AdamW, clipping
and schedule (tools/llama_train_torch.py). Rank r reads rows r*B..(r+1)*B-1 of each
global batch, as `fsdp train` does, so both train on the same data.

Launched by mpirun, one process a rank: the rank and world size come from Open MPI's
environment, the rendezvous from MASTER_ADDR and MASTER_PORT.

A step is timed on each rank from zeroing the gradients to the end of the optimizer's
step, the span `fsdp train`'s step_ms covers (forward, backward, the gradient norm's
all-reduce, clipping, AdamW); the loss logged is the mean over ranks, taken outside
that span. Rank 0 writes a JSON object: every rank's step times, the losses, the gradient norms
(before clipping), each
rank's resident set size (RSS) once torch is imported and the process group is up and
once the model is sharded, its peak RSS over the training steps alone (the peak is
restarted after the setup), and the thread settings torch ran with.
Usage: fsdp2_llama.py DUMP.bin OUT.json sdpa|eager
(sdpa: attention by F.scaled_dot_product_attention; eager: llama_torch.py's own)"""
import gc
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor

TOOLS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools")
sys.path.insert(0, TOOLS)
from llama_torch import Attention, Llama  # noqa: E402
from llama_train_torch import lr_warmup_cosine  # noqa: E402
from parity import Parity  # noqa: E402


class SdpaAttention(Attention):
    """llama_torch's attention through F.scaled_dot_product_attention, the fused kernel
    torchtitan's Llama uses (llama_torch.py keeps an explicit softmax, which
    holds several (B, heads, T, T) tensors a block for the backward): the same parameters
    and math, PyTorch at its best."""

    def forward(self, x, rope):
        B, T, _ = x.shape
        q, k, v = self.rotated_qkv(x, rope)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.n_head != self.n_kv_head)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


def rss_bytes(field):
    """VmRSS (now) or VmHWM (peak) of this process, from /proc/self/status."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def clip_grad_norm(params, max_norm):
    """The global norm of the sharded gradients (a DTensor reduced over the ranks), and
    the gradients scaled by max_norm / (norm + 1e-6) where that is below 1, as
    torch.nn.utils.clip_grad_norm_ and fsdp.c do; max_norm <= 0: no clipping."""
    grads = [p.grad for p in params if p.grad is not None]
    norm = torch.nn.utils.get_total_norm(grads, 2.0)
    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    if max_norm > 0:
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)
    return norm


def main(dump, out_path, attention):
    rank, world = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    rss_ready = rss_bytes("VmRSS")

    parity = Parity(dump)
    if parity.dtype != 0:
        sys.exit(f"{dump}: parameters in dtype {parity.dtype}; this benchmark compares fp32 training")
    min_lr, warmup, steps = parity.t["schedule"].tolist()
    warmup, steps = int(warmup), int(steps)
    inputs = torch.from_numpy(parity.t["inputs"]).long()
    targets = torch.from_numpy(parity.t["targets"]).long()
    G = inputs.shape[1]
    if G % world:
        sys.exit(f"global batch {G} does not divide by the world size {world}")
    B = G // world
    rows = slice(rank * B, (rank + 1) * B)

    model = Llama(parity.config)
    if attention == "sdpa":
        for block in model.layers:
            block.attention.__class__ = SdpaAttention
    with torch.no_grad():
        for name, p in model.fsdp_named_parameters():
            p.copy_(parity.initial(name))
    for block in model.layers:
        fully_shard(block)
    fully_shard(model)
    params = list(model.parameters())
    optimizer = model.optimizer(parity.lr, parity.betas, parity.eps, parity.wd)
    peak_lr, clip = parity.lr, parity.clip
    # The dump's weights and the unsharded model are setup, which fsdp train does without
    # (each rank initialises its own shard): freed, and the peak restarted from here.
    del parity
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # Linux: VmHWM := VmRSS
    rss_setup = rss_bytes("VmRSS")

    step_ms, losses, grad_norms = [], [], []
    for step in range(steps):
        lr = lr_warmup_cosine(step, warmup, steps, peak_lr, min_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        _, loss = model(inputs[step, rows], targets[step, rows])
        loss.backward()
        grad_norms.append(clip_grad_norm(params, clip).item())
        optimizer.step()
        step_ms.append((time.perf_counter() - start) * 1e3)
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        losses.append(mean_loss.item() / world)

    every = [None] * world
    dist.all_gather_object(every, {"step_ms": step_ms, "rss_ready_bytes": rss_ready, "rss_setup_bytes": rss_setup,
                                   "rss_train_peak_bytes": rss_bytes("VmHWM")})
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"torch_version": torch.__version__, "world_size": world, "batch_per_rank": B,
                       "attention": attention,
                       "seq_len": inputs.shape[2], "losses": losses, "grad_norms": grad_norms, "ranks": every,
                       "torch_num_threads": torch.get_num_threads(),
                       "torch_num_interop_threads": torch.get_num_interop_threads()}, f)
    # No teardown: gloo's, with a peer closing its connections first, aborted a rank in
    # std::terminate under load (the pictures test in CI, after a barrier and in
    # destroy_process_group alike). Once every rank has passed the barrier, the results are
    # written and each process leaves without running gloo's destructors.
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("sdpa", "eager"):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3])
