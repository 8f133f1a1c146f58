#!/usr/bin/env python3
"""Memory snapshots for tests/memviz_test.sh, and the checks of what `fsdp memviz`
drew from them. The expected peak and its breakdown are computed here, by a replay
of the events written, independently of the C code.

  memviz_snapshot.py write OUT.json all|no-comm|large
  memviz_snapshot.py check-html DOM.html SNAPSHOT.json [--every-band-visible]   (the DOM Chromium dumped)
  memviz_snapshot.py check-svg OUT.svg SNAPSHOT.json
"""
import json
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

CATEGORIES = ["sharded_params", "unsharded_params", "sharded_grads", "unsharded_grads",
              "optimizer", "activations", "comm", "other"]
KIB, MIB = 1024, 1024 * 1024


class Recorder:
    """Events of one rank as an FSDP step makes them: gathers, activations,
    gradients, reduce-scatters and the optimizer, with a clock that sometimes
    stands still (several events at the same time)."""

    def __init__(self, rank, start, skip):
        self.rank, self.start, self.skip = rank, start, skip
        self.events, self.time_us, self.step = [], 0.0, 0

    def event(self, nbytes, category, unit, op):
        if category in self.skip:
            return
        self.time_us += 0.5 * (len(self.events) % 3)
        self.events.append({"time_us": self.time_us, "bytes": nbytes, "category": category,
                            "unit": unit, "op": op, "step": self.step})


def record_step(r, n_blocks, first_step):
    params, acts, comm = 4 * MIB, (2 + r.rank) * MIB, 1 * MIB
    r.event(512 * KIB, "other", "", "forward")
    for b in range(n_blocks):
        unit = f"block {b}"
        r.event(comm, "comm", unit, "all-gather")
        r.event(params, "unsharded_params", unit, "all-gather")
        r.event(-comm, "comm", unit, "all-gather")
        r.event(acts, "activations", unit, "forward")
        r.event(-params, "unsharded_params", unit, "forward")
    for b in reversed(range(n_blocks)):
        unit = f"block {b}"
        r.event(params, "unsharded_params", unit, "all-gather")
        r.event(params, "unsharded_grads", unit, "backward")
        r.event(-acts, "activations", unit, "backward")
        r.event(-params, "unsharded_params", unit, "backward")
        r.event(comm, "comm", unit, "reduce-scatter")
        if first_step:
            r.event(params // 2, "sharded_grads", unit, "reduce-scatter")
        r.event(-comm, "comm", unit, "reduce-scatter")
        r.event(-params, "unsharded_grads", unit, "reduce-scatter")
    if first_step:
        r.event(n_blocks * 3 * MIB, "optimizer", "", "optimizer")
    r.event(-512 * KIB, "other", "", "optimizer")


def make_snapshot(variant):
    steps = [2, 3]
    world_size, n_blocks = (1, 4000) if variant == "large" else (2, 3)
    skip = {"comm"} if variant == "no-comm" else set()
    ranks = []
    for rank in range(world_size):
        start = {c: 0 for c in CATEGORIES}
        start["sharded_params"] = n_blocks * 2 * MIB + rank * 123
        r = Recorder(rank, start, skip)
        for i, step in enumerate(steps):
            r.step = step
            record_step(r, n_blocks, first_step=(i == 0))
        ranks.append({"rank": rank, "start": start, "events": r.events})
    return {"format": "fsdp-memory-snapshot", "version": 1, "world_size": world_size, "steps": steps,
            "categories": CATEGORIES, "ranks": ranks}


def expected_peak(rank):
    """(total, bytes by category, the event that reached it or None, categories ever nonzero)."""
    held = dict(rank["start"])
    ever = {c for c, b in held.items() if b > 0}
    best = (sum(held.values()), dict(held), None)
    for e in rank["events"]:
        held[e["category"]] += e["bytes"]
        if held[e["category"]] > 0:
            ever.add(e["category"])
        if sum(held.values()) > best[0]:
            best = (sum(held.values()), dict(held), e)
    return best + (ever,)


class Node:
    def __init__(self, tag, attrs):
        self.tag, self.attrs, self.children, self.text = tag, dict(attrs), [], ""

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def classes(self):
        return self.attrs.get("class", "").split()

    def all_text(self):
        return self.text + "".join(child.all_text() for child in self.children)


class TreeBuilder(HTMLParser):
    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self):
        super().__init__()
        self.root = Node("document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs)
        self.stack[-1].children.append(node)
        if tag not in self.VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, attrs))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].text += data


failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def check_html(dom_path, snapshot, every_band_visible):
    builder = TreeBuilder()
    with open(dom_path, encoding="utf-8") as f:
        builder.feed(f.read())
    nodes = list(builder.root.iter())
    body = [n for n in nodes if n.tag == "body"]
    check(body and body[0].attrs.get("data-rendered") == "yes", "the page's render check did not run")
    for n in nodes:
        check(n.tag != "link" and "src" not in n.attrs, f"the page loads an outside resource: <{n.tag} {n.attrs}>")
    sections = {n.attrs.get("data-rank"): n for n in nodes if n.tag == "section" and "rank" in n.classes()}
    for rank in snapshot["ranks"]:
        where = f"rank {rank['rank']}"
        section = sections.get(str(rank["rank"]))
        check(section is not None, f"{where}: no section")
        if section is None:
            continue
        total, at_peak, event, ever = expected_peak(rank)
        inside = list(section.iter())
        areas = {n.attrs.get("data-category"): n for n in inside if n.tag == "path" and "area" in n.classes()}
        check(set(areas) == ever, f"{where}: areas drawn for {sorted(areas)}, expected {sorted(ever)}")
        fills = set()
        for category, area in areas.items():
            width = float(area.attrs.get("data-rendered-width", "0"))
            height = float(area.attrs.get("data-rendered-height", "0"))
            fill = area.attrs.get("data-rendered-fill", "none")
            # A band thinner than the drawing's resolution is a flat line where the bands
            # under it are flat too: only the large snapshot has such bands.
            check(width > 0 and (height > 0 or not every_band_visible),
                  f"{where}: {category} drawn {width} x {height} px")
            check(fill not in ("none", ""), f"{where}: {category} has no fill")
            fills.add(fill)
            # A band thinner than a pixel everywhere has no probe point.
            if "data-probe-x" in area.attrs or every_band_visible:
                check(area.attrs.get("data-rendered-hit") == "yes",
                      f"{where}: a hit test inside the {category} band does not find it "
                      f"(probe {area.attrs.get('data-probe-x')}, {area.attrs.get('data-probe-y')})")
        check(len(fills) == len(areas), f"{where}: categories share colours: {sorted(fills)}")
        markers = [n for n in inside if n.tag == "circle" and "data-rendered-width" in n.attrs]
        check(len(markers) == 1 and float(markers[0].attrs["data-rendered-width"]) > 0,
              f"{where}: the peak marker is not drawn")
        peak = [n for n in inside if n.tag == "p" and "peak" in n.classes()]
        check(len(peak) == 1 and f"({total:,} bytes)" in peak[0].all_text(),
              f"{where}: peak text {[p.all_text() for p in peak]} does not show {total:,} bytes")
        cause = " ".join(n.all_text() for n in inside if n.tag == "p" and "cause" in n.classes())
        check(event is not None and event["unit"] in cause and event["op"] in cause,
              f"{where}: the cause {cause!r} does not name the peak's event {event}")
        for row in (n for n in inside if n.tag == "tr" and "data-category" in n.attrs):
            category = row.attrs["data-category"]
            cells = [c.all_text() for c in row.children if c.tag == "td"]
            check(f"{at_peak[category]:,}" in cells,
                  f"{where}: {category} at the peak shows {cells}, expected {at_peak[category]:,} bytes")


def check_svg(svg_path, snapshot):
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.parse(svg_path).getroot()
    groups = {g.get("data-rank"): g for g in root.iter(ns + "g") if g.get("class") == "rank"}
    for rank in snapshot["ranks"]:
        where = f"svg rank {rank['rank']}"
        group = groups.get(str(rank["rank"]))
        check(group is not None, f"{where}: no group")
        if group is None:
            continue
        total, at_peak, _, ever = expected_peak(rank)
        areas = {p.get("data-category") for p in group.iter(ns + "path") if p.get("class") == "area"}
        legend = {g.get("data-category") for g in group.iter(ns + "g") if g.get("class") == "legend-item"}
        listed = {g.get("data-category") for g in group.iter(ns + "g") if g.get("class") == "breakdown"}
        check(areas == ever and legend == ever, f"{where}: areas {sorted(areas)}, legend {sorted(legend)}")
        check(listed == set(CATEGORIES), f"{where}: breakdown lists {sorted(listed)}")
        peak = "".join(t for g in group.iter(ns + "g") if g.get("class") == "peak" for t in g.itertext())
        check(f"({total:,} bytes)" in peak, f"{where}: peak text {peak!r} does not show {total:,} bytes")


def main():
    command, path = sys.argv[1], sys.argv[2]
    if command == "write":
        with open(path, "w") as f:
            json.dump(make_snapshot(sys.argv[3]), f)
        return 0
    with open(sys.argv[3]) as f:
        snapshot = json.load(f)
    if command == "check-html":
        check_html(path, snapshot, every_band_visible="--every-band-visible" in sys.argv[4:])
    else:
        check_svg(path, snapshot)
    for message in failures:
        print(f"FAIL {path}: {message}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
