"""Where a traced `fsdp train` step's time goes, op by op, from the run's Chrome trace and
its output: each kernel's milliseconds a step on rank 0's compute thread, its share of
them, GFLOP/s for the products (the linear layers' and the attention's), and what each
ran on (the run's cpu: line). FLOPs as the log counts them (6 N + 12 L C T a token), the
attention's causal half of its 12 L C T, which is what is computed (the masked half of a
row's keys is skipped), split a third to the forward and two to the backward.
Usage: step_ops.py TRACE OUTPUT BATCH SEQ   (OUTPUT: the run's stdout, its model:, flops:
and cpu: lines)"""
import collections
import json
import re
import sys


def main(trace_path, output_path, batch, seq):
    out = open(output_path).read()
    model = re.search(r"^model: \S+, (\d+) layers, \d+ heads, (\d+) embd", out, re.M)
    flops = re.search(r"^flops: ([0-9.]+) GFLOP a step", out, re.M)
    cpu = re.search(r"^cpu: (.*)$", out, re.M)
    layers, width = int(model.group(1)), int(model.group(2))
    tokens = batch * seq
    attention = 6.0 * layers * width * seq * tokens / 1e9
    products = float(flops.group(1)) - 2 * attention
    gflop = {"matmul_forward": products / 3, "matmul_backward": 2 * products / 3,
             "attention_forward": attention / 3, "attention_backward": 2 * attention / 3}
    engines = re.search(r"products (\S+) on (oneDNN[^,]*), attention's on (.*)$", cpu.group(1)) if cpu else None
    ran_on = {}
    if engines:
        ran_on = {"matmul_forward": engines.group(2), "matmul_backward": engines.group(2),
                  "attention_forward": engines.group(3), "attention_backward": engines.group(3)}
    events = json.load(open(trace_path))["traceEvents"]
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    steps = sum(1 for e in events if e.get("ph") == "X" and e["pid"] == 0 and e["name"].split(" ")[0] == "optimizer")
    ms = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e["pid"] == 0 and tracks.get((0, e["tid"]), "").endswith(" kernels"):
            ms[e["name"].split(" ")[0]] += e["dur"] / 1e3 / max(steps, 1)
    total = sum(ms.values())
    print(f"cpu: {cpu.group(1) if cpu else '?'}")
    print(f"| op | ms a step | share | GFLOP/s | on |")
    print("|---|---:|---:|---:|---|")
    for op, t in ms.most_common():
        rate = f"{gflop[op] / (t / 1e3):.0f}" if op in gflop and t > 0 else ""
        print(f"| {op} | {t:.1f} | {100 * t / total:.1f}% | {rate} | {ran_on.get(op, '')} |")
    print(f"| all kernels | {total:.1f} | 100% | {(products + attention) / (total / 1e3):.0f} | |")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
