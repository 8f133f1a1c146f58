"""Draws docs/pictures.md's plots from the runs scripts/pictures.sh made (its data folder),
as SVG with matplotlib: each function reads its runs' files and writes one picture; a
picture whose runs are absent (no PyTorch FSDP2, no testbed) is left out with a note.
Usage: pictures.py DATA_DIR OUT_DIR"""
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

MIB, GIB = 2.0**20, 2.0**30
# memviz's colours for the trainer's categories, in its order.
CATEGORY_COLORS = {"sharded_params": "#1f5fa8", "unsharded_params": "#7fb2e5", "sharded_grads": "#e07b00",
                   "unsharded_grads": "#f5bd6e", "optimizer": "#2e9e4a", "activations": "#d43d3d",
                   "comm": "#8c62b8", "other": "#8a8a8a"}
# SVG text stays text (selectable, small files); the hash salt keeps the ids stable run to run.
plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "fsdp.c", "font.size": 10,
                     "axes.grid": True, "grid.color": "#e4e4e4", "axes.axisbelow": True})


def save(fig, out, name):
    path = os.path.join(out, name)
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)
    print(f"wrote {path}")


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def read_json(path):
    with open(path) as f:
        return json.load(f)


def parity(data, out):
    """1. Loss and grad norm of fsdp train and PyTorch FSDP2 per step, and their relative difference."""
    worlds = sorted(int(p.rsplit("_w", 1)[1][:-5]) for p in glob.glob(os.path.join(data, "parity_torch_w*.json")))
    if not worlds:
        print("1: no FSDP2 runs, picture left out")
        return
    fig, (ax_loss, ax_norm, ax_diff) = plt.subplots(1, 3, figsize=(13, 4), layout="constrained")
    for w, color in zip(worlds, ("#1f5fa8", "#e07b00", "#2e9e4a")):
        ours = read_jsonl(os.path.join(data, f"parity_ours_w{w}.jsonl"))
        torch = read_json(os.path.join(data, f"parity_torch_w{w}.json"))
        steps = [r["step"] for r in ours]
        pairs = {"loss": ([r["loss"] for r in ours], torch["losses"]),
                 "grad norm": ([r["grad_norm"] for r in ours], torch["grad_norms"])}
        for ax, (what, (a, b)) in zip((ax_loss, ax_norm), pairs.items()):
            ax.plot(steps, a, color=color, label=f"fsdp.c, W={w}")
            ax.plot(steps, b, color=color, linestyle="none", marker="o", markersize=4, fillstyle="none",
                    label=f"PyTorch FSDP2, W={w}")
            rel = [max(abs(x - y) / abs(y), 1e-16) for x, y in zip(a, b)]
            ax_diff.semilogy(steps, rel, color=color, linestyle="-" if what == "loss" else "--",
                             label=f"{what}, W={w}")
    ax_loss.set(title="Training loss", xlabel="step", ylabel="cross-entropy loss (nats/token)")
    ax_norm.set(title="Gradient norm (before clipping)", xlabel="step", ylabel="global L2 norm")
    ax_diff.set(title="fsdp.c against FSDP2", xlabel="step", ylabel="|fsdp.c − FSDP2| / |FSDP2|  (log)")
    for ax in (ax_loss, ax_norm, ax_diff):
        ax.legend(fontsize=8)
    fig.suptitle(f"llama3-debug, fp32, fully_shard per block on gloo vs fsdp train --sharding full: "
                 f"same initial weights and batches (torch {torch['torch_version']})")
    save(fig, out, "parity.svg")


def replay_last_step(snapshot, rank=0):
    """Times (ms from the step's first event) and bytes per category over the snapshot's last step."""
    r = next(x for x in snapshot["ranks"] if x["rank"] == rank)
    current = dict(r["start"])
    last = max(e["step"] for e in r["events"])
    times, series = [], {c: [] for c in snapshot["categories"]}
    t0 = None
    for e in r["events"]:
        current[e["category"]] += e["bytes"]
        if e["step"] != last:
            continue
        t0 = e["time_us"] if t0 is None else t0
        times.append((e["time_us"] - t0) / 1e3)
        for c in series:
            series[c].append(current[c])
    return times, series


def memory(data, out):
    """2. Memory over one step by category under each strategy, with the plan's peak."""
    configs = [("full", "full (ZeRO-3)"), ("grad-op", "grad-op (ZeRO-2)"), ("none", "none (DDP)"),
               ("full-ac", "full + activation checkpointing")]
    fig, axes = plt.subplots(1, 4, figsize=(15, 4.3), sharey=True, layout="constrained")
    for ax, (name, title) in zip(axes, configs):
        snapshot = read_json(os.path.join(data, f"snapshot_{name}.json"))
        plan = read_json(os.path.join(data, f"plan_{name}.json"))
        logged = read_jsonl(os.path.join(data, f"log_{name}.jsonl"))[-1]["mem_peak_bytes_rank0"]
        times, series = replay_last_step(snapshot)
        cats = [c for c in snapshot["categories"] if any(series[c])]
        ax.stackplot(times, [[b / MIB for b in series[c]] for c in cats], labels=cats, step="post",
                     colors=[CATEGORY_COLORS.get(c, "#999") for c in cats], linewidth=0)
        predicted = plan["total_peak_bytes"]
        ax.axhline(predicted / MIB, color="black", linestyle="--", linewidth=1.2, label="fsdp plan: predicted peak")
        agree = "= plan" if logged == predicted else f"plan {predicted:,} B"
        ax.set_title(f"{title}\npeak {logged:,} B {agree}", fontsize=9)
        ax.set_xlabel("time in the step (ms)")
    axes[0].set_ylabel("bytes held by rank 0 (MiB)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=8)
    fig.suptitle("Memory of one training step by category, W=2, rank 0 (fsdp train --memory-snapshot)")
    save(fig, out, "memory-step.svg")


def scaling(data, out):
    """4. fsdp plan's peak per rank from 1 to 64 ranks, with GPUs' memory."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.3), layout="constrained")
    for ax, (model, title) in zip(axes, (("gpt2", "GPT-2 124M"), ("llama3-8b", "Llama 3 8B"))):
        for sharding, color in (("full", "#1f5fa8"), ("grad-op", "#e07b00"), ("none", "#d43d3d")):
            files = sorted(glob.glob(os.path.join(data, f"scaling_{model}_{sharding}_w*.json")),
                           key=lambda p: int(p.rsplit("_w", 1)[1][:-5]))
            plans = [read_json(p) for p in files]
            ax.loglog([p["world_size"] for p in plans], [p["total_peak_bytes"] / GIB for p in plans], base=2,
                      marker="o", color=color, label=f"--sharding {sharding}")
        for gib, style in ((80, ":"), (141, "-.")):
            ax.axhline(gib, color="#444", linestyle=style, linewidth=1, label=f"{gib} GiB GPU")
        ax.set(title=f"{title}: bf16 parameters, fp32 master and AdamW, 1 × 1024 tokens per rank",
               xlabel="ranks W (log)", ylabel="peak memory per rank (GiB, log)")
        ax.title.set_fontsize(9)
        ax.legend(fontsize=8)
    fig.suptitle("Memory per rank predicted by fsdp plan")
    save(fig, out, "plan-scaling.svg")


def hsdp(data, out):
    """5. Bytes per rank per step within and between nodes, flat full sharding against HSDP."""
    names = [n for n in ("full", "hsdp") if os.path.exists(os.path.join(data, f"hsdp_{n}.plan.json"))]
    if len(names) < 2:
        print("5: no testbed runs, picture left out")
        return
    fig, ax = plt.subplots(figsize=(8, 4.3), layout="constrained")
    labels = {"full": "full sharding over 4", "hsdp": "HSDP --mesh 2,2"}
    for i, n in enumerate(names):
        plan = read_json(os.path.join(data, f"hsdp_{n}.plan.json"))
        run = read_json(os.path.join(data, f"hsdp_{n}.bytes.json"))
        sent = plan["sent_bytes_per_step"]
        per_rank = [b / run["steps"] / plan["ranks_per_node"] / MIB for b in run["node_sent_bytes"]]
        ax.bar(i - 0.25, sent["within_node"] / MIB, 0.25, color="#7fb2e5",
               label="within a node (plan)" if i == 0 else None)
        ax.bar(i, sent["between_nodes"] / MIB, 0.25, color="#1f5fa8",
               label="between nodes (plan)" if i == 0 else None)
        ax.bar(i + 0.25, sum(per_rank) / len(per_rank), 0.25, color="#e07b00",
               label="between nodes (measured on the uplinks)" if i == 0 else None)
    ax.set_xticks(range(len(names)), [labels[n] for n in names])
    ax.set(ylabel="bytes sent per rank per step (MiB)",
           title="2 nodes × 2 ranks on the network-namespace testbed (tests/testbed)")
    ax.legend(fontsize=8)
    save(fig, out, "hsdp-traffic.svg")


KERNEL_CLASSES = [("matmul", "matmul (oneDNN)", "#1f5fa8"), ("attention", "attention", "#d43d3d"),
                  ("layernorm", "layernorm", "#e07b00"), ("gelu", "GELU", "#8c62b8"),
                  ("residual", "residual add", "#7fb2e5"), ("encoder", "embedding lookup", "#b5942a"),
                  ("classifier", "classifier (softmax + cross-entropy)", "#f5bd6e"),
                  ("adamw", "AdamW", "#2e9e4a"), ("runtime", "runtime's small ops (scale, sums, casts)", "#3fb5b0"),
                  ("wait", "waiting on communication (exposed)", "#f4a6a6"),
                  ("outside", "compute thread outside kernels and waits", "#d9d9d9")]


def kernel_class(op):
    for stem in ("_forward", "_backward"):
        op = op.removesuffix(stem)
    return op if op in {c[0] for c in KERNEL_CLASSES} else "runtime"


def step_breakdown(trace_path, rank=0):
    """Milliseconds per step of rank 0's compute thread by kernel class, the exposed waits and
    the rest, over the steps that begin and end inside the trace (between optimizer spans)."""
    events = read_json(trace_path)["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == rank}
    spans = [e for e in events if e["ph"] == "X" and e["pid"] == rank]
    ends = sorted(e["ts"] + e["dur"] for e in spans if e["name"] == "optimizer")
    begin, end = ends[0], ends[-1]
    steps = len(ends) - 1
    totals = {c[0]: 0.0 for c in KERNEL_CLASSES}
    for e in spans:
        if not begin <= e["ts"] < end:
            continue
        if threads[e["tid"]] == "compute kernels":
            totals[kernel_class(e["name"])] += e["dur"] / 1e3 / steps
        elif threads[e["tid"]] == "compute" and e["name"].startswith("wait "):
            totals["wait"] += e["dur"] / 1e3 / steps
    totals["outside"] = (end - begin) / 1e3 / steps - sum(totals.values())
    return totals, steps


def step_time(data, out):
    """6. Where a step's CPU time goes, kernel class by kernel class, per configuration."""
    configs = [("full", "full"), ("full-no-prefetch", "full, no prefetch"), ("grad-op", "grad-op"),
               ("none", "none (DDP)"), ("full-ac", "full + AC")]
    fig, ax = plt.subplots(figsize=(11, 5), layout="constrained")
    for i, (name, label) in enumerate(configs):
        totals, steps = step_breakdown(os.path.join(data, f"trace_{name}.json"))
        left = 0.0
        for key, legend, color in KERNEL_CLASSES:
            ax.barh(i, totals[key], left=left, color=color, edgecolor="white", linewidth=0.5,
                    label=legend if i == 0 else None)
            left += totals[key]
    ax.set_yticks(range(len(configs)), [c[1] for c in configs])
    ax.invert_yaxis()
    ax.set(xlabel=f"time per step on rank 0's compute thread (ms, mean of {steps} traced step"
                  f"{'s' if steps > 1 else ''})")
    fig.suptitle("Where a training step's time goes on the CPU, by kernel class (fsdp train --trace, W=2)")
    fig.legend(fontsize=8, loc="outside lower center", ncol=4)
    save(fig, out, "step-time.svg")


def extend(data, out):
    """7. The learning rate of a run given more --steps: at its end, twice (--resume auto), and before its end."""
    runs = sorted(glob.glob(os.path.join(data, "extend_[0-9]*.jsonl")), key=lambda p: int(p.rsplit("_", 1)[1][:-6]))
    whole = read_jsonl(os.path.join(data, "extend_whole.jsonl"))
    early = read_jsonl(os.path.join(data, "extend_early.jsonl"))
    last = whole[-1]["step"]
    fig, ax = plt.subplots(figsize=(9, 4.5), layout="constrained")
    ax.plot([r["step"] for r in whole], [r["lr"] for r in whole], color="#8a8a8a", linestyle="--",
            label=f"--steps {last} from the start")
    for path, color in zip(runs, ("#1f5fa8", "#e07b00", "#2e9e4a")):
        rows = read_jsonl(path)
        label = f"--steps {rows[-1]['step']}" + (" (fresh)" if path == runs[0] else ", --resume auto from its end")
        ax.plot([r["step"] for r in rows], [r["lr"] for r in rows], color=color, marker="o", markersize=2.5,
                label=label)
    ax.plot([r["step"] for r in early], [r["lr"] for r in early], color="#d43d3d", marker="o", markersize=2.5,
            label=f"--steps {last}, resumed from step {early[0]['step'] - 1} of the first run")
    ax.set(xlabel="step", ylabel="learning rate")
    ax.legend(fontsize=8)
    fig.suptitle("More --steps on resume: the decay goes on from the rate the run had reached to --min-lr at the "
                 "new end")
    save(fig, out, "lr-extend.svg")


def main(data, out):
    parity(data, out)
    memory(data, out)
    scaling(data, out)
    hsdp(data, out)
    step_time(data, out)
    extend(data, out)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
