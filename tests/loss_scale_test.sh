#!/bin/sh
# fp16 dynamic loss scaling: with a loss scale far too high the unsharded fp16
# gradients overflow, and the scaler skips those steps (no update: the run's
# parameters stay at their initial values, so its eval loss is the untrained one),
# says so in the log, and halves the scale until the gradients fit; then the
# steps go through and the loss falls.
# Usage: loss_scale_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
timeout 300 "$@" -np 2 "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 \
  --batch-size 4 --steps 30 --lr 2e-3 --warmup 0 --data "$tmp/corpus.txt" --param-dtype fp16 \
  --loss-scale 1e9 --log "$tmp/log.jsonl" > "$tmp/out.txt"
grep -Eq "step 1: gradients overflowed in fp16 \(grad norm (inf|nan)\): step skipped, loss scale 1e\+09 -> 5e\+08" \
  "$tmp/out.txt" || {
  echo "FAIL: no skipped-step message for the first step"; cat "$tmp/out.txt"; exit 1; }
"$PYTHON" - "$tmp/log.jsonl" <<'PY'
import json, sys
steps = [json.loads(line) for line in open(sys.argv[1])]
skipped = [s for s in steps if s["skipped"]]
taken = [s for s in steps if not s["skipped"]]
assert steps[0]["skipped"] and steps[0]["loss_scale"] == 1e9, steps[0]
for a, b in zip(steps, steps[1:]):
    expected = a["loss_scale"] / 2 if a["skipped"] else a["loss_scale"]
    assert b["loss_scale"] == expected, (a, b)
# fp16's largest value is 65504: the scale must come down to about that over the
# largest gradient (below 1 here) before a step goes through.
first_taken = steps.index(taken[0])
assert first_taken >= 3 and skipped[:first_taken] == steps[:first_taken] and len(taken) >= 8, (first_taken, len(taken))
assert taken[0]["loss_scale"] <= 1e9 / 8
assert taken[-1]["loss"] < taken[0]["loss"] - 0.1, (taken[0]["loss"], taken[-1]["loss"])
print(f"loss scaling: {len(skipped)} steps skipped, scale 1e9 -> {taken[0]['loss_scale']:g}, "
      f"loss {taken[0]['loss']:.3f} -> {taken[-1]['loss']:.3f}")
PY
