#!/bin/sh
# `fsdp traceviz` on traces that `fsdp train --trace` wrote on 2 ranks under full and
# grad-op sharding: every span of the rank that overlaps the step (its window found
# again here from the optimizer spans) is drawn once, on its track, with its kind (the
# CPU's kernels on a track of their own); the backward of full sharding gathers blocks
# and grad-op's gathers nothing (GPT-2's tied embedding, used at both ends of the forward,
# included);
# headless Chromium renders the images. Bad inputs and flags end with a message naming them.
# Usage: traceviz_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
# Exits 77 (skipped) when only the Chromium check could not run.
FSDP=${1:?usage: traceviz_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...}
PYTHON=${2:?usage: traceviz_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...}
SRC=${3:?usage: traceviz_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...}
shift 3
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
  failed=$((failed + 1))
  echo "FAIL $*"
}

cp "$SRC/tests/data/shakespeare.txt" "$tmp/corpus.txt"
for sharding in full grad-op; do
  timeout 300 "$@" -np 2 "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 \
    --batch-size 4 --steps 3 --data "$tmp/corpus.txt" --sharding "$sharding" --trace "$tmp/$sharding.json" \
    >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; exit 1; }
  for rank in 0 1; do
    for step in 1 2; do
      out="$tmp/$sharding-r$rank-s$step.svg"
      "$FSDP" traceviz "$tmp/$sharding.json" -o "$out" --rank "$rank" --step "$step" >"$tmp/viz.log" 2>&1 ||
        { fail "$sharding rank $rank step $step: $(cat "$tmp/viz.log")"; continue; }
      "$PYTHON" - "$tmp/$sharding.json" "$out" "$rank" "$step" "$sharding" <<'PY' || fail "$out: see above"
import sys
import json
import xml.etree.ElementTree as ET
trace, svg, rank, step, sharding = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
spans = [e for e in json.load(open(trace))["traceEvents"] if e["ph"] == "X" and e["pid"] == rank]
ends = sorted(e["ts"] + e["dur"] for e in spans if e["name"] == "optimizer")
begin = ends[step - 2] if step > 1 else min(e["ts"] for e in spans)
end = ends[step - 1]
inside = [e for e in spans if e["ts"] < end and e["ts"] + e["dur"] > begin]
backward_begin = min(e["ts"] for e in inside if e["name"].startswith("backward "))
optimizer_begin = next(e["ts"] for e in inside if e["name"] == "optimizer" and e["ts"] + e["dur"] == end)
in_backward = sorted(e["name"] for e in inside if backward_begin <= e["ts"] < optimizer_begin)
ns = {"s": "http://www.w3.org/2000/svg"}
drawn = ET.parse(svg).getroot().findall(".//s:g[@class='span']", ns)
names = sorted(g.find("s:title", ns).text.split(":")[0] for g in drawn)
assert names == sorted(e["name"] for e in inside), f"drawn {len(names)} spans, the step holds {len(inside)}"
tracks = {e["tid"]: e["args"]["name"] for e in json.load(open(trace))["traceEvents"]
          if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == rank}
assert sorted(g.get("data-track") for g in drawn) == sorted(tracks[e["tid"]] for e in inside), "tracks differ"
kinds = {"forward", "backward", "optimizer", "wait", "all-gather", "reduce-scatter", "all-reduce"}
for g in drawn:
    first = g.find("s:title", ns).text.split(":")[0].split(" ")[0]
    want = "kernel" if g.get("data-track") == "compute kernels" else first if first in kinds else "other"
    assert g.get("data-kind") == want, f"{first} on {g.get('data-track')}: drawn as {g.get('data-kind')}"
assert any(g.get("data-kind") == "kernel" and g.get("data-track") == "compute kernels" for g in drawn), \
    "no kernel of the compute thread drawn"
# Under full sharding the blocks are gathered again in the backward; under grad-op every
# unit stays gathered from its forward to its last backward use: nothing is gathered.
assert sorted(g.find("s:title", ns).text.split(":")[0] for g in drawn if g.get("data-phase") == "backward") \
    == in_backward, "the spans drawn as the backward's are not those between its start and the optimizer"
backward_gathers = [g.find("s:title", ns).text for g in drawn
                    if g.get("data-kind") == "all-gather" and g.get("data-phase") == "backward"]
backward = [g for g in drawn if g.get("data-kind") == "backward"]
assert backward, "no backward span in the step"
if sharding == "grad-op":
    assert not backward_gathers, f"grad-op: all-gathers in the backward: {backward_gathers}"
else:
    assert any(t.startswith("all-gather block") for t in backward_gathers), "full: no block gathered in the backward"
PY
    done
  done
done

# Llama's embedding and output projection are apart (untied): its backward under grad-op
# gathers nothing at all, as the summary under the timeline says.
timeout 300 "$@" -np 2 "$FSDP" train --model llama3-debug --n-layer 2 --seq-len 32 --batch-size 2 --steps 3 \
  --data "$tmp/corpus.txt" --sharding grad-op --trace "$tmp/llama.json" >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; exit 1; }
if "$FSDP" traceviz "$tmp/llama.json" -o "$tmp/llama.svg" >"$tmp/viz.log" 2>&1; then
  grep -q '<text class="total" data-kind="all-gather" data-count="[1-9][0-9]*" data-backward="0"' "$tmp/llama.svg" ||
    fail "llama3-debug under grad-op: an all-gather in the backward, or none at all: $(grep -o 'all-gather: [^<]*' \
      "$tmp/llama.svg")"
else
  fail "llama3-debug: $(cat "$tmp/viz.log")"
fi

# Bad inputs: a clear message naming the file or flag, exit 1 (bad file) or 2 (usage).
expect() {  # expect STATUS TEXT ARGS...
  want=$1 text=$2
  shift 2
  "$FSDP" traceviz "$@" >"$tmp/err.log" 2>&1
  got=$?
  if [ "$got" -ne "$want" ] || ! grep -q -- "$text" "$tmp/err.log"; then
    fail "traceviz $*: exit $got (want $want), output: $(head -c 300 "$tmp/err.log") (want '$text')"
  fi
}
printf '{"traceEvents": [' >"$tmp/truncated.json"
printf '{"traceEvents": [{"ph": "X", "name": "forward block 0", "pid": 0, "tid": 1, "ts": 1, "dur": "x"}]}' \
  >"$tmp/bad-dur.json"
printf '{"ranks": []}' >"$tmp/not-trace.json"
expect 1 "no-such.json" "$tmp/no-such.json" -o "$tmp/x.svg"
expect 1 "not valid JSON" "$tmp/truncated.json" -o "$tmp/x.svg"
printf '{"traceEvents": [}' >"$tmp/syntax.json"
expect 1 "not valid JSON: syntax error at line 1, column 18" "$tmp/syntax.json" -o "$tmp/x.svg"
"$PYTHON" -c 'print("[" * 2000 + "]" * 2000)' >"$tmp/deep.json"
expect 1 "arrays and objects nested deeper than cJSON's limit at line 1, column 1001" "$tmp/deep.json" -o "$tmp/x.svg"
expect 1 '"traceEvents"\[0\]: "dur" must be a number' "$tmp/bad-dur.json" -o "$tmp/x.svg"
expect 1 'missing the "traceEvents"' "$tmp/not-trace.json" -o "$tmp/x.svg"
expect 1 "no spans of rank 7" "$tmp/full.json" --rank 7 -o "$tmp/x.svg"
expect 1 "rank 0 holds 2 steps" "$tmp/full.json" --step 3 -o "$tmp/x.svg"
# Steps no clock measured, whose axis was ticked without end (tests/fuzz: trace): times a
# double apart, and a step whose tenth rounds to 0.
printf '{"traceEvents": [{"ph": "X", "name": "optimizer", "pid": 0, "tid": 1, "ts": 1e308, "dur": 1e308}]}' \
  >"$tmp/endless.json"
printf '{"traceEvents": [{"ph": "X", "name": "optimizer", "pid": 0, "tid": 1, "ts": 0, "dur": 1e-320}]}' \
  >"$tmp/instant.json"
expect 1 "trace '$tmp/endless.json': rank 0's step 1 lasts inf ms" "$tmp/endless.json" -o "$tmp/x.svg"
expect 1 "trace '$tmp/instant.json': rank 0's step 1 lasts 9.88131e-324 ms" "$tmp/instant.json" -o "$tmp/x.svg"
expect 2 "must end in .svg" "$tmp/full.json" -o "$tmp/x.png"
expect 2 "missing -o" "$tmp/full.json"
cp "$tmp/full.json" "$tmp/trace.svg"
expect 2 "-o: '$tmp/trace.svg' is the file to draw" "$tmp/trace.svg" -o "$tmp/trace.svg"
cmp -s "$tmp/full.json" "$tmp/trace.svg" || fail "-o naming the trace replaced it"
expect 2 "--step: must be a positive integer, got '0'" "$tmp/full.json" --step 0 -o "$tmp/x.svg"
expect 2 "--rank: must be a non-negative integer, got '-1'" "$tmp/full.json" --rank -1 -o "$tmp/x.svg"
expect 2 "unknown flag" "$tmp/full.json" --bogus -o "$tmp/x.svg"
[ -e "$tmp/x.svg" ] && fail "a failed run left $tmp/x.svg"

browser=$(command -v chromium || command -v chromium-browser)
if [ -z "$browser" ]; then
  echo "chromium is not installed: the images were not rendered (scripts/install-deps.sh installs it)"
  [ "$failed" -eq 0 ] && exit 77
  exit 1
fi
"$PYTHON" "$(dirname "$0")/render_images.py" "$browser" "$tmp" "$tmp"/*-s2.svg || fail "Chromium: see above"
if [ "$failed" -eq 0 ]; then echo "traceviz: all checks passed"; fi
[ "$failed" -eq 0 ]
