"""Checks a Chrome trace written by `fsdp train --trace`: its structure (a process
per rank, the compute / all-gather / reduce-scatter tracks of each, well-formed
spans and counters) and, on request, what the trace proves about the run:
  --expect-overlap   an all-gather overlaps an earlier block's forward, and a
                     reduce-scatter overlaps a lower block's backward, on some rank
  --max-unsharded N  the "unsharded units" counter never exceeds N on any rank
Usage: trace_check.py TRACE --world-size W [--expect-overlap] [--max-unsharded N]
Exits 1, naming every problem, when a check fails."""
import argparse
import json
import re
import sys

TRACKS = ("compute", "all-gather", "reduce-scatter")


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt(span):
    return f"'{span['name']}' [{span['ts']:.1f}, {span['ts'] + span['dur']:.1f}) us"


def overlaps(a, b):
    return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]


class Trace:
    """The events of a trace file, by rank; problems found on the way go to errors."""

    def __init__(self, events, world_size, errors):
        self.processes = {}  # pid -> process name
        self.threads = {}    # (pid, tid) -> thread name
        self.spans = []
        self.counters = []
        for i, e in enumerate(events):
            self.add(i, e, errors)
        self.check_ranks(world_size, errors)

    def add(self, i, e, errors):
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            errors.append(f"event {i} has no phase: {e!r:.120}")
            return
        ph, args = e["ph"], e.get("args")
        if ph == "M" and isinstance(args, dict):
            if e.get("name") == "process_name":
                self.processes[e.get("pid")] = args.get("name")
            elif e.get("name") == "thread_name":
                self.threads[(e.get("pid"), e.get("tid"))] = args.get("name")
        elif ph == "X":
            missing = [k for k in ("name", "ts", "dur", "pid", "tid") if k not in e]
            if missing:
                errors.append(f"span {i} lacks {', '.join(missing)}: {e!r:.120}")
            elif not (isinstance(e["name"], str) and is_number(e["ts"]) and is_number(e["dur"])
                      and isinstance(e["pid"], int) and isinstance(e["tid"], int)):
                errors.append(f"span {i} has a field of the wrong type: {e!r:.120}")
            elif e["dur"] < 0:
                errors.append(f"span {i} has negative dur {e['dur']}: {e!r:.120}")
            else:
                self.spans.append(e)
        elif ph == "C":
            if not (isinstance(e.get("name"), str) and is_number(e.get("ts")) and "pid" in e
                    and isinstance(args, dict) and all(is_number(v) for v in args.values())):
                errors.append(f"counter {i} is malformed: {e!r:.120}")
            else:
                self.counters.append(e)

    def check_ranks(self, world_size, errors):
        for rank in range(world_size):
            if rank not in self.processes:
                errors.append(f"rank {rank} is missing: no process_name for pid {rank}")
                continue
            names = {name for (pid, _), name in self.threads.items() if pid == rank}
            for track in TRACKS:
                if track not in names:
                    errors.append(f"rank {rank} has no '{track}' track (tracks: {sorted(names)})")
        extra = sorted(set(self.processes) - set(range(world_size)), key=str)
        if extra:
            errors.append(f"processes beyond --world-size {world_size}: pids {extra}")
        unnamed = {(s["pid"], s["tid"]) for s in self.spans} - set(self.threads)
        if unnamed:
            errors.append(f"spans on tracks without a thread_name: (pid, tid) {sorted(unnamed)}")

    def track_of(self, span):
        return self.threads.get((span["pid"], span["tid"]))

    def blocks(self, rank, pattern, track=None):
        """{block index: [spans]} of this rank's spans whose name is `pattern` + index."""
        out = {}
        for s in self.spans:
            m = re.fullmatch(pattern + r" block (\d+)", s["name"])
            if m and s["pid"] == rank and (track is None or self.track_of(s) == track):
                out.setdefault(int(m.group(1)), []).append(s)
        return out


def check_overlap(trace, world_size, errors):
    """Prefetch shows as block i+1's all-gather running during block i's forward;
    backward overlap as block j's reduce-scatter running during block k < j's backward."""
    gather_pairs, reduce_pairs = [], []
    for rank in range(world_size):
        forward = trace.blocks(rank, "forward", "compute")
        backward = trace.blocks(rank, "backward", "compute")
        gathers = trace.blocks(rank, "all-gather")
        reduces = trace.blocks(rank, "reduce-scatter")
        for i, fwd in forward.items():
            gather_pairs += [(rank, g, f) for f in fwd for g in gathers.get(i + 1, []) if overlaps(g, f)]
        for j, rs in reduces.items():
            reduce_pairs += [(rank, r, b) for k, bwd in backward.items() if k < j
                             for b in bwd for r in rs if overlaps(r, b)]
    for what, pairs in (("all-gather block i+1 during forward block i", gather_pairs),
                        ("reduce-scatter block j during backward block k < j", reduce_pairs)):
        ranks = sorted({rank for rank, _, _ in pairs})
        print(f"overlap: {len(pairs)} pairs of {what} (ranks {ranks})")
        if pairs:
            rank, comm, compute = pairs[0]
            print(f"  e.g. rank {rank}: {fmt(comm)} overlaps {fmt(compute)}")
        else:
            errors.append(f"no {what} on any rank: communication does not overlap compute")


def check_unsharded(trace, world_size, limit, errors):
    peaks = {}
    for c in trace.counters:
        if c["name"] == "unsharded units" and "units" in c["args"]:
            peaks[c["pid"]] = max(peaks.get(c["pid"], float("-inf")), c["args"]["units"])
    if not peaks:
        errors.append("no 'unsharded units' counter (series 'units') in the trace")
        return
    print("unsharded units: max " + ", ".join(f"rank {pid} {v:g}" for pid, v in sorted(peaks.items(), key=str)))
    for rank in range(world_size):
        if rank not in peaks:
            errors.append(f"rank {rank} has no 'unsharded units' counter")
        elif peaks[rank] > limit:
            errors.append(f"rank {rank}: {peaks[rank]:g} units unsharded at once, above --max-unsharded {limit}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--world-size", type=int, required=True)
    p.add_argument("--expect-overlap", action="store_true")
    p.add_argument("--max-unsharded", type=int)
    a = p.parse_args()
    try:
        with open(a.trace) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"trace_check: cannot read '{a.trace}': {e}")
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        sys.exit(f"trace_check: '{a.trace}' has no traceEvents list")

    errors = []
    trace = Trace(events, a.world_size, errors)
    by_track = {}
    for s in trace.spans:
        by_track[trace.track_of(s)] = by_track.get(trace.track_of(s), 0) + 1
    print(f"{a.trace}: {len(events)} events, {len(trace.processes)} ranks, {len(trace.counters)} counter values, "
          f"spans by track: {dict(sorted(by_track.items(), key=str))}")
    if a.expect_overlap:
        check_overlap(trace, a.world_size, errors)
    if a.max_unsharded is not None:
        check_unsharded(trace, a.world_size, a.max_unsharded, errors)
    for e in errors:
        print("FAIL: " + e)
    if errors:
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
