#!/bin/sh
# Overlap through `fsdp train`, at W=2 and 3:
# - every prefetch mode gives the run with --overlap off bit for bit (losses and grad norms);
# - the profile trace shows the next unit's all-gather during a unit's forward and a
#   reduce-scatter during a later unit's backward, and the "unsharded units" counter
#   never passes --max-unsharded;
# - the log carries comm_ms and exposed_comm_ms;
# - at W=1 no collective runs (a shard group of one rank reads its kept parameters, the
#   shard itself or its rounded copy, and reduces by widening into the shard:
#   src/fsdp/unit.c, unit_grads.c), in bf16 as in fp32.
# Usage: overlap_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"

# Units of 0.8M parameters: their all-gathers take long enough to be seen in flight.
train() {  # train RANKS NAME [ARGS...]
  ranks=$1 name=$2
  shift 2
  timeout 300 $MPIRUN -np "$ranks" "$FSDP" train --model gpt2-tiny --n-layer 4 --n-embd 256 --n-head 4 \
    --seq-len 64 --batch-size 2 --steps 4 --data "$tmp/corpus.txt" --log "$tmp/$name.jsonl" "$@" \
    > "$tmp/$name.out" 2>&1 || { cat "$tmp/$name.out"; exit 1; }
}
MPIRUN="$*"

for w in 2 3; do
  train "$w" "w$w-off" --overlap off
  train "$w" "w$w-none" --prefetch 0 --backward-prefetch none
  train "$w" "w$w-forward" --prefetch 1 --backward-prefetch none
  train "$w" "w$w-pre" --prefetch 1 --backward-prefetch pre --trace "$tmp/w$w.trace.json" --trace-steps 2:4
  train "$w" "w$w-post" --prefetch 2 --backward-prefetch post --max-unsharded 3
done
for dtype in fp32 bf16; do
  train 1 "w1-$dtype" --param-dtype "$dtype" --trace "$tmp/w1-$dtype.trace.json" --trace-steps 2:4
done

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
read = lambda name: [json.loads(line) for line in open(os.path.join(tmp, name + ".jsonl"))]
failures = []
for w in (2, 3):
    reference = read(f"w{w}-off")
    if any(key not in reference[0] for key in ("comm_ms", "exposed_comm_ms", "all_gather_ms", "reduce_scatter_ms")):
        failures.append(f"W={w}: the log lacks the comm keys: {sorted(reference[0])}")
    for mode in ("none", "forward", "pre", "post"):
        run = read(f"w{w}-{mode}")
        for r, ref in zip(run, reference):
            for key in ("loss", "grad_norm"):
                if r[key] != ref[key]:
                    failures.append(f"W={w} {mode} step {r['step']}: {key} {r[key]!r} != {ref[key]!r} without overlap")
print("overlap: W=2,3 x prefetch off / forward / pre / post equal the run without overlap bit for bit")
for dtype in ("fp32", "bf16"):
    trace = json.load(open(os.path.join(tmp, f"w1-{dtype}.trace.json")))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    spans = {e["name"] for e in events if e.get("ph") == "X"}
    collectives = sorted(n for n in spans if n.startswith(("all-gather ", "reduce-scatter ")))
    if collectives:
        failures.append(f"W=1 {dtype}: collectives ran on one rank: {collectives[:4]}")
    if not any(n.startswith("backward ") for n in spans):
        failures.append(f"W=1 {dtype}: the trace holds no backward span: {sorted(spans)[:8]}")
print("overlap: W=1 runs no collective, fp32 and bf16")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures[:20]))
    sys.exit(1)
PY
for w in 2 3; do
  "$PYTHON" "$SRC/tools/trace_check.py" "$tmp/w$w.trace.json" --world-size "$w" --expect-overlap --max-unsharded 2
done
