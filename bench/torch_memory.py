#!/usr/bin/python3
"""Peak memory of one PyTorch training process, measured like fsdp.c's tracked
bytes: the GPT-2 of tools/gpt2_torch.py (default: the GPT-2 124M shape, as
`fsdp train --model gpt2`), AdamW on matrices only (model.optimizer), global-norm
clipping, byte tokens of a text file, single process, on the CPU.

Tracked peak ("live tensor bytes"): the run, from before the token data and the
model exist to the end of the last step, is profiled with
torch.profiler.profile(profile_memory=True). PyTorch's CPU allocator
(c10's DefaultCPUAllocator) then reports every allocation and every free of a
tensor's storage to the profiler, each with its size and the allocator's
running total of live bytes (`total_allocated`, counted from the start of the
profile). The peak is the largest running total; it is also recomputed by
summing the signed sizes in event order, as a check. This is the quantity
fsdp.c tracks: the bytes its own buffers hold (parameters, gradients, AdamW
state, activations, temporaries, token data), requested sizes, no allocator
slack, no interpreter or libraries. Neither counts OpenBLAS's internal
buffers or the C library's own allocations.

Peak RSS growth: VmHWM at the end minus VmRSS just before the model is built
(after importing torch and reading the data): the process's own footprint of
the training, slack and page granularity included. The profiler's event
buffers add to it, so --no-profile measures RSS without the profiler.

Token data is held as fsdp.c holds it: the whole file as 2-byte tokens (ids <
256 here); batches are drawn from the first 1 - --val-fraction of it.

Run with Debian's Python (the one with torch):
    /usr/bin/python3 bench/torch_memory.py --data ../shared/data/tinyshakespeare.txt --batch-size 1 --seq-len 256
--json FILE writes the summary as one JSON object.
"""
import argparse
import json
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1 << 20


def proc_status_bytes(key):
    """A field of /proc/self/status in bytes (VmRSS, VmHWM), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    if key == "VmHWM":
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return None


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # defaults: the gpt2 preset of `fsdp train` (124M parameters with max_seq_len 1024)
    p.add_argument("--n-layer", type=int, default=12)
    p.add_argument("--n-head", type=int, default=12)
    p.add_argument("--n-embd", type=int, default=768)
    p.add_argument("--vocab-size", type=int, default=50257)
    p.add_argument("--block-size", type=int, default=1024, help="max_seq_len: rows of the position embedding")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    p.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt"),
                   help="text file, one token per byte")
    p.add_argument("--val-fraction", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--no-profile", action="store_true", help="no profiler: peak RSS only")
    p.add_argument("--json", default=None, help="write the summary as one JSON object to this file")
    return p.parse_args(argv)


def allocation_events(prof):
    """(time_ns, signed bytes, running total or None, enclosing op) of every
    allocation and free the profiler saw, in order."""
    results = prof.profiler.kineto_results
    events = []
    tree = getattr(results, "experimental_event_tree", None)
    if tree is not None:
        def walk(node, parent):
            fields = node.extra_fields
            if type(fields).__name__ == "_ExtraFields_Allocation":
                events.append((node.start_time_ns, fields.alloc_size, fields.total_allocated, parent))
            for child in node.children:
                walk(child, node.name if type(fields).__name__ != "_ExtraFields_Allocation" else parent)
        for root in tree():
            walk(root, None)
    else:  # older or newer torch: the flat list of "[memory]" events, microsecond resolution
        for e in results.events():
            if e.name() == "[memory]":
                events.append((e.start_us() * 1000, e.nbytes(), None, None))
    events.sort(key=lambda e: e[0])
    return events


def scope_ranges(prof):
    """name -> (start_ns, end_ns) of each record_function scope of run() ("train step k",
    "step k forward+backward", "step k clip+AdamW")."""
    ranges = {}
    tree = getattr(prof.profiler.kineto_results, "experimental_event_tree", None)
    if tree is None:
        return ranges
    def walk(node):
        if node.name.startswith("train step ") or node.name.startswith("step "):
            ranges[node.name] = (node.start_time_ns, node.end_time_ns)
        for child in node.children:
            walk(child)
    for root in tree():
        walk(root)
    return ranges


def run(args):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    from gpt2_torch import GPT2

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    T, B = args.seq_len, args.batch_size
    with open(args.data, "rb") as f:
        raw = f.read()
    n_train = len(raw) - int(len(raw) * args.val_fraction)
    if max(raw) >= args.vocab_size:
        sys.exit(f"token {max(raw)} >= --vocab-size {args.vocab_size}")

    from contextlib import nullcontext
    from torch.profiler import ProfilerActivity, profile, record_function

    rss_before = proc_status_bytes("VmRSS")
    prof_ctx = nullcontext() if args.no_profile else profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    t_start = time.perf_counter()
    steps = []
    with prof_ctx as prof:
        # the whole file as 2-byte tokens, allocated by torch (as fsdp.c holds its tokens)
        data = torch.frombuffer(bytearray(raw), dtype=torch.uint8).to(torch.int16)
        model = GPT2(args.n_layer, args.n_head, args.n_embd, args.vocab_size, args.block_size)
        model.train()
        opt = model.optimizer(args.lr, (0.9, 0.95), 1e-8, args.weight_decay)
        gen = torch.Generator().manual_seed(args.seed)
        offsets = torch.arange(T + 1)
        for step in range(1, args.steps + 1):
            with record_function(f"train step {step}"):
                t0 = time.perf_counter()
                starts = torch.randint(0, n_train - T - 1 + 1, (B,), generator=gen)
                chunk = data[starts[:, None] + offsets].long()
                x, y = chunk[:, :-1], chunk[:, 1:]
                with record_function(f"step {step} forward+backward"):
                    opt.zero_grad(set_to_none=True)
                    # the logits are not kept: the backward frees them, as fsdp.c frees its activations
                    loss = model(x, y)[1]
                    loss.backward()
                with record_function(f"step {step} clip+AdamW"):
                    torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
                    opt.step()
                lossv = loss.item()
                del chunk, x, y, loss
                steps.append({"step": step, "loss": lossv, "step_ms": (time.perf_counter() - t0) * 1e3})
    wall_s = time.perf_counter() - t_start
    rss_peak = proc_status_bytes("VmHWM")

    n_params = sum(p.numel() for p in model.parameters())
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    state_bytes = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values()
                      if torch.is_tensor(t))
    summary = {
        "impl": "pytorch", "torch_version": torch.__version__, "threads": torch.get_num_threads(),
        "n_layer": args.n_layer, "n_head": args.n_head, "n_embd": args.n_embd, "vocab_size": args.vocab_size,
        "block_size": args.block_size, "seq_len": T, "batch_size": B, "steps": args.steps, "n_params": n_params,
        "param_bytes": param_bytes, "grad_bytes": param_bytes, "optimizer_bytes": state_bytes,
        "data_bytes": data.numel() * data.element_size(),
        "profiled": not args.no_profile, "wall_s": wall_s,
        "rss_before_model_bytes": rss_before, "rss_peak_bytes": rss_peak,
        "rss_growth_bytes": rss_peak - rss_before if rss_before is not None else None,
        "steps_log": steps,
    }
    if args.no_profile:
        return summary

    events = allocation_events(prof)
    running, summed_peak = 0, 0
    for _, size, _, _ in events:
        running += size
        summed_peak = max(summed_peak, running)
    with_total = [e for e in events if e[2] is not None]
    if with_total:
        peak_event = max(with_total, key=lambda e: e[2])
        peak, peak_time, peak_op = peak_event[2], peak_event[0], peak_event[3]
    else:
        peak, peak_time, peak_op = summed_peak, None, None
    ranges = scope_ranges(prof)
    by_scope = {}
    for name, (lo, hi) in ranges.items():
        inside = [e[2] for e in with_total if lo <= e[0] <= hi]
        if inside:
            by_scope[name] = max(inside)
    by_step = {int(n.split()[-1]): v for n, v in by_scope.items() if n.startswith("train step ")}
    peak_step = next((int(n.split()[-1]) for n, (lo, hi) in ranges.items()
                      if n.startswith("train step ") and peak_time is not None and lo <= peak_time <= hi), None)
    summary.update({
        "n_alloc_events": len(events),
        "tracked_peak_bytes": peak,
        "tracked_peak_bytes_summed": summed_peak,
        "tracked_peak_bytes_by_step": {str(k): v for k, v in sorted(by_step.items())},
        "tracked_peak_bytes_by_scope": by_scope,
        "tracked_peak_step": peak_step, "tracked_peak_op": peak_op,
        "live_bytes_at_end": running,
    })
    return summary


def main(argv=None):
    args = parse_args(argv)
    s = run(args)
    print(f"pytorch {s['torch_version']} | {s['threads']} thread(s) | {s['n_params']} parameters | "
          f"B={s['batch_size']} T={s['seq_len']} | {s['steps']} steps in {s['wall_s']:.1f} s"
          f"{' (profiled)' if s['profiled'] else ''}")
    print(f"  parameters {s['param_bytes'] / MIB:.2f} MiB, gradients {s['grad_bytes'] / MIB:.2f} MiB, "
          f"AdamW state {s['optimizer_bytes'] / MIB:.2f} MiB, token data {s['data_bytes'] / MIB:.2f} MiB")
    if s["profiled"]:
        per_step = ", ".join(f"step {k} {v / MIB:.2f}" for k, v in s["tracked_peak_bytes_by_step"].items())
        print(f"  tracked peak (live tensor bytes): {s['tracked_peak_bytes'] / MIB:.2f} MiB "
              f"(summed sizes: {s['tracked_peak_bytes_summed'] / MIB:.2f} MiB; {s['n_alloc_events']} events), "
              f"reached in step {s['tracked_peak_step']} inside {s['tracked_peak_op']}; per step: {per_step}")
        last = s["steps"]
        phases = s["tracked_peak_bytes_by_scope"]
        print(f"  step {last}: peak {phases.get(f'step {last} forward+backward', 0) / MIB:.2f} MiB in forward+backward, "
              f"{phases.get(f'step {last} clip+AdamW', 0) / MIB:.2f} MiB in clip+AdamW")
    print(f"  RSS before the model {s['rss_before_model_bytes'] / MIB:.1f} MiB, peak RSS {s['rss_peak_bytes'] / MIB:.1f} MiB,"
          f" growth {s['rss_growth_bytes'] / MIB:.1f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f)
    return s


if __name__ == "__main__":
    main()
