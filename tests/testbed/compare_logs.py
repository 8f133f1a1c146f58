"""Compares `fsdp train --log` files: every one must give the first one's loss and
grad-norm trajectory, step for step, within a relative tolerance.
Usage: compare_logs.py TOLERANCE REFERENCE.jsonl NAME=LOG.jsonl..."""
import json
import sys


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    tolerance = float(sys.argv[1])
    reference = read(sys.argv[2])
    if not reference:
        sys.exit(f"FAIL: {sys.argv[2]} holds no steps")
    failures = 0
    for arg in sys.argv[3:]:
        name, path = arg.split("=", 1)
        run = read(path)
        if len(run) != len(reference):
            print(f"FAIL {name}: {len(run)} steps, the reference {len(reference)}")
            failures += 1
            continue
        worst = 0.0
        for ours, ref in zip(run, reference):
            for key in ("loss", "grad_norm"):
                diff = abs(ours[key] - ref[key]) / max(abs(ref[key]), 1e-12)
                worst = max(worst, diff)
                if diff > tolerance:
                    print(f"FAIL {name}: step {ours['step']} {key} {ours[key]!r}, reference {ref[key]!r}")
                    failures += 1
        print(f"{name}: {len(run)} steps, largest relative difference {worst:.2e} (tolerance {tolerance:g})")
    sys.exit(1 if failures else 0)


main()
