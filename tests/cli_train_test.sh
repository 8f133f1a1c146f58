#!/bin/sh
# `fsdp train` end to end: the JSON log has every documented key, the loss falls,
# and the same global batch on 1, 2 and 4 ranks (full, grad-op, none) gives the
# same loss and grad-norm trajectory.
# Usage: cli_train_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"

train() {  # train RANKS STRATEGY LOG [ARGS...]
  ranks=$1 strategy=$2 log=$3
  shift 3
  timeout 300 "$@" -np "$ranks" "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 \
    --seq-len 32 --global-batch-size 8 --steps 12 --lr 2e-3 --warmup 2 --data "$tmp/corpus.txt" \
    --sharding "$strategy" --log "$log" --val-every 6 > "$tmp/out.txt"
}

train 1 full "$tmp/w1.jsonl" "$@"
for w in 2 4; do
  for strategy in full grad-op none; do train "$w" "$strategy" "$tmp/w$w-$strategy.jsonl" "$@"; done
done

"$PYTHON" - "$tmp" <<'PY'
import json, sys, glob, os
tmp = sys.argv[1]
read = lambda p: [json.loads(line) for line in open(p)]
reference = read(os.path.join(tmp, "w1.jsonl"))
keys = {"step", "loss", "grad_norm", "lr", "step_ms", "tokens_per_s", "mem_peak_bytes"}
failures = []
if len(reference) != 12:
    failures.append(f"expected 12 log lines, got {len(reference)}")
missing = keys - set(reference[0])
if missing:
    failures.append(f"log lacks keys {sorted(missing)}")
if not any("val_loss" in r for r in reference):
    failures.append("no val_loss in the log despite --val-every")
first, last = reference[0]["loss"], sum(r["loss"] for r in reference[-3:]) / 3
if not last < first - 0.3:
    failures.append(f"loss did not fall: {first:.4f} -> {last:.4f}")
for path in sorted(glob.glob(os.path.join(tmp, "w[24]-*.jsonl"))):
    run = read(path)
    for r, ref in zip(run, reference):
        for key in ("loss", "grad_norm"):
            if abs(r[key] - ref[key]) > 1e-5 * abs(ref[key]):
                failures.append(f"{os.path.basename(path)} step {r['step']} {key} {r[key]} != {ref[key]}")
print(f"cli_train: loss {first:.4f} -> {last:.4f}; W=2,4 x full/grad-op/none match W=1")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures[:20]))
    sys.exit(1)
PY
