"""The comparisons of tests/gpu_train_test.sh, on `fsdp train --log` files (one JSON object
per step) and `fsdp plan --format json` output. Each prints what it compared and the
largest difference it saw, and exits 1 naming every failure.

  same REF RUN RTOL       the same steps, every loss and grad norm within RTOL relative of
                          REF's (RTOL 0: the same bits)
  learns FP32 BF16 TOL    both losses fall below FALL x the first step's, and BF16's mean
                          loss over the last LAST steps is within TOL relative of FP32's
  plan PLAN RUN           step 2's tracked peak of every category, and the total, equal the
                          plan's to the byte; the host's (pinned) too where the plan has any
  snapshot SNAP RUN       the memory snapshot's peak, replayed from its events, equals the
                          log's largest per-step peak over the steps the snapshot covers
"""
import json
import math
import sys

LAST, FALL = 5, 0.7
failures = []


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def fail(message):
    failures.append(message)


def finite(value):  # cJSON writes NaN and infinities as null
    return isinstance(value, (int, float)) and math.isfinite(value)


def same(ref_path, run_path, rtol):
    ref, run = read_log(ref_path), read_log(run_path)
    if len(ref) != len(run) or not ref:
        fail(f"{run_path}: {len(run)} steps, {ref_path}: {len(ref)}")
    worst = {"loss": 0.0, "grad_norm": 0.0}
    for a, b in zip(ref, run):
        for key in worst:
            x, y = a[key], b[key]
            if not (finite(x) and finite(y)):
                fail(f"step {a['step']} {key}: {y!r} against {x!r}, not finite")
                continue
            diff = abs(y - x) / max(abs(x), 1e-30)
            worst[key] = max(worst[key], diff)
            if diff > rtol:
                fail(f"step {a['step']} {key}: {y!r} against {x!r} (relative {diff:.2e}, allowed {rtol:g})")
    print(f"{len(run)} steps; largest relative difference: loss {worst['loss']:.2e}, "
          f"grad norm {worst['grad_norm']:.2e} (allowed {rtol:g})")


def learns(fp32_path, bf16_path, tol):
    fp32, bf16 = read_log(fp32_path), read_log(bf16_path)
    if len(fp32) != len(bf16) or len(fp32) < 2 * LAST:
        fail(f"{len(fp32)} fp32 steps and {len(bf16)} bf16 steps")
        return
    mean = lambda run: sum(r["loss"] for r in run[-LAST:]) / LAST
    for name, run in (("fp32", fp32), ("bf16", bf16)):
        if not all(finite(r["loss"]) and finite(r["grad_norm"]) for r in run):
            fail(f"{name}: a loss or grad norm is not finite")
            return
        if mean(run) > FALL * run[0]["loss"]:
            fail(f"{name} did not learn: loss {run[0]['loss']:.4f} -> {mean(run):.4f} "
                 f"(mean of the last {LAST}), not below {FALL} x the first")
    diff = abs(mean(bf16) - mean(fp32)) / mean(fp32)
    if not diff <= tol:
        fail(f"bf16's last loss {mean(bf16):.4f} against fp32's {mean(fp32):.4f}: {diff:.2%} apart "
             f"(allowed {tol:.0%})")
    print(f"{len(fp32)} steps: fp32 {fp32[0]['loss']:.4f} -> {mean(fp32):.4f}, bf16 {bf16[0]['loss']:.4f} -> "
          f"{mean(bf16):.4f} (mean of the last {LAST}): {diff:.2%} apart (allowed {tol:.0%})")


def plan(plan_path, run_path):
    with open(plan_path) as f:
        planned = json.load(f)
    step2 = read_log(run_path)[1]
    rows = [("", c, b, step2["mem_peak_bytes_by_category"][c]) for c, b in planned["peak_bytes"].items()]
    rows.append(("", "total", planned["total_peak_bytes"], step2["mem_peak_bytes_rank0"]))
    if planned.get("host_total_peak_bytes"):
        host = step2.get("mem_host_peak_bytes_by_category", {})
        rows += [("host ", c, b, host.get(c)) for c, b in planned["host_peak_bytes"].items()]
        rows.append(("host ", "total", planned["host_total_peak_bytes"], step2.get("mem_host_peak_bytes_rank0")))
    for where, category, want, got in rows:
        if want != got:
            fail(f"{where}{category}: planned {want} bytes, tracked {got}")
    print(f"planned total {planned['total_peak_bytes']} bytes, tracked {step2['mem_peak_bytes_rank0']}"
          + (f"; host {planned['host_total_peak_bytes']}" if planned.get("host_total_peak_bytes") else ""))


def snapshot(snap_path, run_path):
    with open(snap_path) as f:
        snap = json.load(f)
    first, last = snap["steps"]
    logged = max(r["mem_peak_bytes_rank0"] for r in read_log(run_path) if first <= r["step"] <= last)
    rank = snap["ranks"][0]
    held = dict(rank["start"])
    peak = sum(held.values())
    for e in rank["events"]:
        held[e["category"]] += e["bytes"]
        peak = max(peak, sum(held.values()))
    if peak != logged:
        fail(f"the snapshot's peak over steps {first}..{last} is {peak} bytes, the log's {logged}")
    print(f"snapshot of steps {first}..{last}: {len(rank['events'])} events, peak {peak} bytes, the log's {logged}")


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "same":
        same(args[0], args[1], float(args[2]))
    elif command == "learns":
        learns(args[0], args[1], float(args[2]))
    elif command == "plan":
        plan(args[0], args[1])
    elif command == "snapshot":
        snapshot(args[0], args[1])
    else:
        sys.exit(f"unknown command {command!r}")
    for message in failures:
        print(f"FAIL {message}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
