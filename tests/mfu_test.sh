#!/bin/sh
# GFLOP/s and MFU in the log (src/train/mfu.c, src/train/peak.c): every step's gflops is the model FLOPs of
# a step, 6 N + 12 L C T a token over the step's tokens on all ranks (computed here from
# the shape), over its time; its mfu is gflops over the peak of all ranks: --peak-gflops
# times W. Without the flag the peak comes from a probe, or from the cache in
# $XDG_CACHE_HOME/fsdp.c: a line written under the key the log names is read back and
# used; an unwritable cache leaves the run as it was. fsdp plan's memory bandwidth is
# cached the same way.
# Usage: mfu_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"

MPIRUN="$*"
train() {  # train RANKS LOG [FLAGS...]
  ranks=$1 log=$2
  shift 2
  # shellcheck disable=SC2086 # $MPIRUN is a command and its flags
  timeout 300 $MPIRUN -np "$ranks" "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 \
    --seq-len 32 --global-batch-size 4 --steps 3 --data "$tmp/corpus.txt" --log "$log" "$@" > "$tmp/out.txt" ||
    { tail -20 "$tmp/out.txt"; exit 1; }
}

train 2 "$tmp/given.jsonl" --peak-gflops 250
grep -q "peak: 250 GFLOP/s a rank (--peak-gflops)" "$tmp/out.txt" || { echo "FAIL: no --peak-gflops line"; exit 1; }

export XDG_CACHE_HOME="$tmp/cache"
train 1 "$tmp/probed.jsonl"
key=$(sed -n 's/.*peak: [0-9]* GFLOP\/s a rank (\(.*\)), measured now.*/\1/p' "$tmp/out.txt")
[ -n "$key" ] || { echo "FAIL: no probe in the log:"; cat "$tmp/out.txt"; exit 1; }
mkdir -p "$tmp/cache/fsdp.c"
printf '1.5 another key\n1234.25 %s\n' "$key" > "$tmp/cache/fsdp.c/peak-gflops.txt"
train 1 "$tmp/cached.jsonl"
grep -q "peak: 1234 GFLOP/s a rank ($key), cached in $tmp/cache/fsdp.c/peak-gflops.txt" "$tmp/out.txt" ||
  { echo "FAIL: the cached peak was not used:"; cat "$tmp/out.txt"; exit 1; }
(export XDG_CACHE_HOME=/dev/null; train 1 "$tmp/uncached.jsonl")

# The plan's memory bandwidth: probed, cached beside the peak, and a line under its key
# read back, so that the same plan does not move with each probe.
"$FSDP" plan --model gpt2-tiny --world-size 1 > /dev/null 2> "$tmp/plan.txt" || { cat "$tmp/plan.txt"; exit 1; }
bandwidth_key=$(sed -n 's/^memory: [0-9.]* GB\/s (\(.*\)), measured now.*/\1/p' "$tmp/plan.txt")
[ -n "$bandwidth_key" ] || { echo "FAIL: no bandwidth probe in the plan:"; cat "$tmp/plan.txt"; exit 1; }
cache="$tmp/cache/fsdp.c/peak-gflops.txt"
{ grep -vF "$bandwidth_key" "$cache"; printf '12.5 %s\n' "$bandwidth_key"; } > "$tmp/cache.new" && mv "$tmp/cache.new" "$cache"
"$FSDP" plan --model gpt2-tiny --world-size 1 --format json > "$tmp/plan.json" 2> "$tmp/plan.txt" ||
  { cat "$tmp/plan.txt"; exit 1; }
grep -qF "memory: 12.5 GB/s ($bandwidth_key), cached in $cache" "$tmp/plan.txt" ||
  { echo "FAIL: the cached bandwidth was not used:"; cat "$tmp/plan.txt"; exit 1; }
"$PYTHON" -c 'import json, sys; m = json.load(open(sys.argv[1]))["time"]["machine"]
assert m["memory_bytes_per_s"] == 12.5e9, m' "$tmp/plan.json" || { echo "FAIL: the plan did not take 12.5 GB/s"; exit 1; }

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
read = lambda name: [json.loads(line) for line in open(os.path.join(tmp, name))]
# gpt2-tiny at 2 layers, 64 wide, vocab 256, 256 positions, T 32: GPT-2's parameters
# (tied), every one in a product.
L, C, V, P, T = 2, 64, 256, 256, 32
N = V * C + P * C + L * (12 * C * C + 13 * C) + 2 * C
flops_per_step = (6 * N + 12 * L * C * T) * 4 * T
failures = []
for name, peak in (("given.jsonl", 250 * 2), ("probed.jsonl", None), ("cached.jsonl", 1234.25),
                   ("uncached.jsonl", None)):
    for r in read(name):
        gflops = flops_per_step / (r["step_ms"] * 1e6)
        if abs(r["gflops"] - gflops) > 1e-6 * gflops:
            failures.append(f"{name} step {r['step']}: gflops {r['gflops']}, expected {gflops}")
        if abs(r["tflops"] - r["gflops"] / 1e3) > 1e-9 * r["gflops"]:
            failures.append(f"{name} step {r['step']}: tflops {r['tflops']}, expected gflops / 1000")
        if "mfu" not in r or (peak and abs(r["mfu"] - r["gflops"] / peak) > 1e-9):
            failures.append(f"{name} step {r['step']}: mfu {r.get('mfu')}, expected gflops / {peak}")
print(f"gflops: {flops_per_step / 1e9:.4f} GFLOP a step over each step's time; mfu over the given, probed and "
      f"cached peaks")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
PY
