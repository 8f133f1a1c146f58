"""Where a run's GPU time went, from `ncu --metrics gpu__time_duration.sum --print-summary
per-kernel` output: each kernel's total time (invocations x average), its share, and the
totals, biggest first. Kernels whose name matches --exclude (default: the parameter
initialisation's) are left out of the shares, so that a profile of N training steps
divides into N steps' worth of kernels.

  python3 tools/ncu_summary.py NCU_OUTPUT [--steps N] [--top 25] [--exclude REGEX]
"""
import argparse
import re
import sys

UNIT_US = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6,
           "nsecond": 1e-3}
# "  name (gx, gy, gz)x(bx, by, bz), Context 1, Stream 7, Device 0, CC 9.0, Invocations 12"
HEADER = re.compile(r"^\s+(?P<name>.+?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\),.*Invocations (?P<n>\d+)\s*$")
# "    gpu__time_duration.sum   us   1.23   4.56   7.89"  (unit, min, max, average)
METRIC = re.compile(r"^\s+gpu__time_duration\.sum\s+(?P<unit>\S+)\s+(\S+)\s+(\S+)\s+(?P<avg>\S+)\s*$")


def parse(lines):
    """Yields (kernel name, invocations, average microseconds) for each summary block."""
    name = None
    for line in lines:
        m = HEADER.match(line)
        if m:
            name, n = m.group("name"), int(m.group("n"))
            continue
        m = METRIC.match(line)
        if m and name is not None:
            unit = m.group("unit")
            if unit not in UNIT_US:
                sys.exit(f"ncu_summary: unknown time unit '{unit}' for {name}")
            yield name, n, float(m.group("avg").replace(",", "")) * UNIT_US[unit]
            name = None


def short(name, width=100):
    return name if len(name) <= width else name[: width - 1] + "…"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path")
    p.add_argument("--steps", type=int, default=1, help="steps in the profile: times are shown per step")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--exclude", default=r"^(init_|fill_kernel)")
    args = p.parse_args()
    with open(args.path, errors="replace") as f:
        rows = list(parse(f))
    if not rows:
        sys.exit(f"ncu_summary: no per-kernel summary found in {args.path}")
    skip = re.compile(args.exclude) if args.exclude else None
    kept, left_out = {}, 0.0
    for name, n, avg in rows:
        if skip and skip.search(name):
            left_out += n * avg
            continue
        k = kept.setdefault(name, [0, 0.0])
        k[0] += n
        k[1] += n * avg
    total = sum(t for _, t in kept.values())
    per = args.steps
    print(f"{total / 1e3 / per:.1f} ms of kernels a step ({per} steps; "
          f"{sum(n for n, _ in kept.values()) // per} launches a step; {left_out / 1e3:.1f} ms left out by --exclude)")
    print(f"| ms a step | share | launches a step | avg us | kernel |\n| --- | --- | --- | --- | --- |")
    for name, (n, t) in sorted(kept.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"| {t / 1e3 / per:.2f} | {100 * t / total:.1f}% | {n / per:g} | {t / n:.1f} | `{short(name)}` |")


if __name__ == "__main__":
    main()
