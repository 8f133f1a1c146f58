#!/usr/bin/env bash
# GPT-2 on the CPU in bf16, two figures of one `fsdp train` at a time:
#   products: the share of the measured bf16 peak that a W=1 step's matrix products reach.
#     `fsdp train --trace` records every kernel on the "compute kernels" track; the
#     products are its matmul_forward and matmul_backward spans. Their FLOPs come from the
#     model's shapes: per block qkv (C -> 3C), attention projection (C -> C), MLP up
#     (C -> 4C) and down (4C -> C), each a forward and a backward's two products (dinp,
#     dweight); the head (C -> V padded to 128) four times, as the loss computes its logits
#     in the forward and again in the backward (src/models/decoder_loss.c). The spans are
#     counted against that list. The peak is fsdp's own probe (src/train/peak.c), run afresh
#     under the same load (a cache of its own), next to the quiet one cached in
#     ~/.cache/fsdp.c/peak-gflops.txt when there is one. The step's other kernels are
#     listed by their share of the step.
#   scaling: tokens/s per rank at W=2 (mpirun, one thread each) over W=1 (one thread),
#     the same B per rank.
# The text's bytes are the tokens (ids below 256: valid input for GPT-2's 50257, and a
# step costs the same). Each figure is over steps 2..S (the first allocates and warms).
#
# Usage: bench/cpu_products.sh [--model gpt2|shakespeare-char] [--batch B] [--seq-len T]
#            [--threads N] [--steps S] [--data FILE] [--build DIR] [--skip-products]
#            [--skip-scaling] [--keep-logs]
# Defaults: gpt2 (124M), B=4, T=256, N = nproc (the products; scaling is one thread per
# rank), S=6, build/. A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODEL=gpt2 BATCH=4 SEQ=256 THREADS="$(nproc)" STEPS=6 PRODUCTS=1 SCALING=1 KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --batch) BATCH="$2"; shift 2 ;;
    --seq-len) SEQ="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --skip-products) PRODUCTS=0; shift ;;
    --skip-scaling) SCALING=0; shift ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done

case "$MODEL" in
  gpt2) SHAPE="12 768 50257" ;;
  shakespeare-char) SHAPE="6 384 256" ;;
  *) echo "--model: '$MODEL' is neither gpt2 nor shakespeare-char" >&2; exit 2 ;;
esac
FSDP="$BUILD/fsdp"
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh $BUILD)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA (--data FILE)" >&2; exit 1; }
[ "$STEPS" -ge 2 ] || { echo "--steps must be >= 2" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-cpu-products.XXXXXX")"
if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi
load() { cut -d' ' -f1 /proc/loadavg; }

# train NAME RANKS THREADS [FLAGS...]: one run, its log in $TMP/NAME.jsonl.
train() {
  local name="$1" ranks="$2" threads="$3"
  shift 3
  local launch=()
  [ "$ranks" -gt 1 ] && launch=(mpirun --allow-run-as-root --oversubscribe -np "$ranks" -x OMP_NUM_THREADS)
  OMP_NUM_THREADS="$threads" "${launch[@]}" "$FSDP" train --model "$MODEL" --data "$DATA" --batch-size "$BATCH" \
    --seq-len "$SEQ" --steps "$STEPS" --param-dtype bf16 --log "$TMP/$name.jsonl" "$@" >"$TMP/$name.out" 2>&1 ||
    { echo "fsdp train ($name) failed:" >&2; tail -20 "$TMP/$name.out" >&2; exit 1; }
}

echo "== $MODEL, bf16, B=$BATCH T=$SEQ per rank, steps 2..$STEPS; machine: $(nproc) cores,"
echo "   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u '+%F %H:%M UTC')"

if [ "$PRODUCTS" = 1 ]; then
  before="$(load)"
  XDG_CACHE_HOME="$TMP/cache" train products 1 "$THREADS" --trace "$TMP/trace.json" --trace-steps "2:$STEPS"
  after="$(load)"
  echo
  echo "-- products, W=1, threads: $THREADS (load average before $before, after $after)"
  /usr/bin/python3 - "$TMP" $SHAPE "$BATCH" "$SEQ" <<'PYEOF'
import collections, json, os, re, sys
tmp = sys.argv[1]
L, C, V, B, T = (int(a) for a in sys.argv[2:7])
Vp = (V + 127) // 128 * 128
N = B * T
if N > (1 << 26) // Vp:
    sys.exit(f"B*T = {N} rows: the loss runs its head in chunks, which this count leaves out (smaller --batch)")
block = 3 * C * C + C * C + 4 * C * C + 4 * C * C  # qkv, attention projection, MLP up, MLP down
flop = 2 * N * (3 * L * block + 4 * C * Vp)
want = {"matmul_forward": 4 * L + 2, "matmul_backward": 4 * L + 1}

trace = json.load(open(f"{tmp}/trace.json"))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
tracks = {e["tid"]: e["args"]["name"] for e in events
          if e.get("ph") == "M" and e["name"] == "thread_name" and e.get("pid") == 0}
spans = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0]
steps = sum(1 for e in spans if tracks[e["tid"]] == "compute" and e["name"] == "optimizer")
kernels = [e for e in spans if tracks[e["tid"]] == "compute kernels"]
count, us = collections.Counter(e["name"] for e in kernels), collections.Counter()
for e in kernels:
    us[e["name"]] += e["dur"]
for name, n in want.items():
    if count[name] != n * steps:
        sys.exit(f"{count[name]} {name} spans in {steps} steps, where the count expects {n} a step")

out = open(f"{tmp}/products.out").read()
m = re.search(r"peak: ([0-9.]+) GFLOP/s a rank \((.*?)\)", out)
peak, key = float(m.group(1)), m.group(2)
cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fsdp.c/peak-gflops.txt")
quiet = next((float(line.split(" ", 1)[0]) for line in (open(cache) if os.path.exists(cache) else [])
              if line.rstrip("\n").split(" ", 1)[1:] == [key]), None)

rows = [json.loads(line) for line in open(f"{tmp}/products.jsonl") if line.strip()][1:]
step_us = sum(r["step_ms"] for r in rows) * 1e3
product_us = us["matmul_forward"] + us["matmul_backward"]
gflops = flop * steps / (product_us * 1e3)
print(f"products: {flop / 1e9:.1f} GFLOP a step in {want['matmul_forward']} forward and "
      f"{want['matmul_backward']} backward spans, {product_us / steps / 1e3:.0f} ms a step: {gflops:.0f} GFLOP/s")
print(f"peak: {peak:.0f} GFLOP/s probed in this run ({key}): **{gflops / peak:.0%}** of it")
if quiet:
    print(f"      {quiet:.0f} GFLOP/s cached from a quiet machine: {gflops / quiet:.0%} of it")
print(f"step: {step_us / len(rows) / 1e3:.0f} ms, the mean of steps 2..; the kernels' share of it:")
for name, t in us.most_common(8):
    print(f"  {name:18s} {t / step_us:6.1%}  ({count[name] // steps} a step)")
PYEOF
fi

if [ "$SCALING" = 1 ]; then
  before="$(load)"
  train w1 1 1
  train w2 2 1
  after="$(load)"
  echo
  echo "-- scaling, one thread per rank (load average before $before, after $after)"
  /usr/bin/python3 - "$TMP" <<'PYEOF'
import json, statistics as st, sys
tmp = sys.argv[1]
def per_rank(name, world):
    rows = [json.loads(line) for line in open(f"{tmp}/{name}.jsonl") if line.strip()][1:]
    return st.median(r["tokens_per_s"] for r in rows) / world
w1, w2 = per_rank("w1", 1), per_rank("w2", 2)
print(f"tokens/s per rank: W=1 {w1:.0f}, W=2 {w2:.0f}: W=2 / W=1 = **{w2 / w1:.2f}**")
PYEOF
fi
