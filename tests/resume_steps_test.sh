#!/bin/sh
# --steps may change on resume (docs/architecture.md, "Checkpoints"). A run of 12 steps
# (warmup 3) writes a checkpoint at step 6; resumed with --steps 20, and again from the
# checkpoint the extended run writes at step 10 with --steps 30, every step's learning rate
# must be the schedule's: the checkpoint's rate goes on (step 7's is the 12-step run's
# step 7), and the cosine's progress runs linearly from where it was to 1 at the new
# --steps. Shrinking above the checkpoint's step works the same way; to or below it is
# refused, naming the flag and the checkpoint. A finished run of 6 steps extended with
# --resume auto to 9, then to 12 (which main refused once: its checkpoint held a decay
# already over) goes on from the rate of its last step, decaying to the new end. The data, batches, optimizer state and
# loss scale are the checkpoint's, so a resume with an unchanged --steps stays exact
# (checkpoint_test.sh).
# Usage: resume_steps_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
MPIRUN="$*"

train() {  # train LOG ARGS...
  log=$1
  shift
  timeout 120 $MPIRUN -np 2 "$FSDP" train --model gpt2-tiny --n-layer 1 --n-embd 32 --n-head 2 --seq-len 16 \
    --global-batch-size 4 --lr 1e-3 --min-lr 1e-4 --warmup 3 --data "$tmp/corpus.txt" --log "$log" "$@" \
    > "$tmp/out.txt" 2>&1
}

train "$tmp/a.jsonl" --steps 12 --checkpoint-dir "$tmp/a" --checkpoint-every 6 || { cat "$tmp/out.txt"; exit 1; }
train "$tmp/b.jsonl" --steps 20 --resume "$tmp/a/step-00000006" --checkpoint-dir "$tmp/b" --checkpoint-every 10 ||
  { cat "$tmp/out.txt"; exit 1; }
grep -q "resume: --steps 20, the checkpoint's 12" "$tmp/out.txt" || { echo "FAIL: no schedule line"; cat "$tmp/out.txt"; exit 1; }
train "$tmp/c.jsonl" --steps 30 --resume "$tmp/b/step-00000010" || { cat "$tmp/out.txt"; exit 1; }
train "$tmp/d.jsonl" --steps 8 --resume "$tmp/a/step-00000006" || { cat "$tmp/out.txt"; exit 1; }
for steps in 6 9 12; do
  train "$tmp/e$steps.jsonl" --steps $steps --checkpoint-dir "$tmp/e" --resume auto || { cat "$tmp/out.txt"; exit 1; }
done
failed=0
for steps in 6 5; do
  if train "$tmp/x.jsonl" --steps $steps --resume "$tmp/a/step-00000006" ||
    ! grep -q "fsdp: error: .*--steps $steps: the checkpoint '$tmp/a/step-00000006' is at step 6; a resumed run needs --steps above it" "$tmp/out.txt"; then
    echo "FAIL: --steps $steps from step 6 was not refused as it should be"
    cat "$tmp/out.txt"
    failed=1
  fi
done

"$PYTHON" - "$tmp" <<'PY' || failed=1
import json, math, sys
tmp = sys.argv[1]
lr, min_lr, warmup = 1e-3, 1e-4, 3

def rates(name):
    return {r["step"]: r["lr"] for r in map(json.loads, open(f"{tmp}/{name}.jsonl"))}

def rate(i, total, start, progress0):  # i: the 0-based step index
    if i < warmup:
        return lr * (i + 1) / (warmup + 1)
    p = progress0 + (1 - progress0) * (i - start) / (total - start)
    return min_lr + 0.5 * (1 + math.cos(math.pi * p)) * (lr - min_lr)

a, b, c, d = rates("a"), rates("b"), rates("c"), rates("d")
p6 = (6 - warmup) / (12 - warmup)
p10 = p6 + (1 - p6) * (10 - 6) / (20 - 6)
# The finished runs go on from their last step: index 5 of the 6-step decay, then index 8
# of the 9-step one.
e5 = (5 - warmup) / (6 - warmup)
e8 = e5 + (1 - e5) * (8 - 5) / (9 - 5)
expected = [("a", a, range(1, 13), 12, warmup, 0.0), ("b", b, range(7, 21), 20, 6, p6),
            ("c", c, range(11, 31), 30, 10, p10), ("d", d, range(7, 9), 8, 6, p6),
            ("e6", rates("e6"), range(1, 7), 6, warmup, 0.0), ("e9", rates("e9"), range(7, 10), 9, 5, e5),
            ("e12", rates("e12"), range(10, 13), 12, 8, e8)]
failures = 0
for name, got, steps, total, start, p0 in expected:
    for step in steps:
        want = rate(step - 1, total, start, p0)
        if not math.isclose(got[step], want, rel_tol=1e-6):
            failures += 1
            print(f"FAIL {name} step {step}: lr {got[step]!r}, expected {want!r}")
if not math.isclose(b[7], a[7], rel_tol=1e-7):
    failures += 1
    print(f"FAIL the extended run's step 7 lr {b[7]!r} is not the 12-step run's {a[7]!r}")
print(f"resume_steps_test: lr of steps 7..20 (to 20), 11..30 (to 30), 7..8 (to 8), a finished run of 6 steps "
      f"extended to 9 and 12, as the schedule says: "
      f"{'no' if failures == 0 else failures} failures")
sys.exit(1 if failures else 0)
PY
exit $failed
