#!/bin/sh
# fsdp train on a model small enough for an emulated CPU (scripts/test-arm64.sh runs it
# under qemu, $FSDP_EMULATOR before the program): 2 ranks give 1 rank's losses and grad
# norms (to 1e-5); a run resumed from the 2-rank run's checkpoint at step 3 logs steps
# 4..6 as the uninterrupted run did (==), in fp32 and in bf16; and that checkpoint resumed
# on 1 rank stays within 1e-5 of it.
# Usage: train_small_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
MPIRUN="$*"

train() {  # train RANKS LOG [ARGS...]
  ranks=$1 log=$2
  shift 2
  # shellcheck disable=SC2086 # $MPIRUN and $FSDP_EMULATOR are commands and their flags
  timeout 300 $MPIRUN -np "$ranks" ${FSDP_EMULATOR:-} "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 32 \
    --n-head 2 --seq-len 16 --global-batch-size 4 --steps 6 --lr 2e-3 --warmup 2 --data "$tmp/corpus.txt" \
    --peak-gflops 1 --log "$log" "$@" > "$tmp/out.txt" 2>&1 || {
    echo "FAIL: fsdp train on $ranks ranks $* exited non-zero"; cat "$tmp/out.txt"; exit 1; }
}

train 1 "$tmp/w1.jsonl"
for dtype in fp32 bf16; do
  train 2 "$tmp/$dtype.jsonl" --param-dtype $dtype --checkpoint-dir "$tmp/$dtype" --checkpoint-every 3
  train 2 "$tmp/$dtype.resumed.jsonl" --param-dtype $dtype --resume "$tmp/$dtype/step-00000003"
  grep -q "resume: from '$tmp/$dtype/step-00000003' at step 3" "$tmp/out.txt" || {
    echo "FAIL: $dtype: no resume line"; cat "$tmp/out.txt"; exit 1; }
done
train 1 "$tmp/fp32.w1.jsonl" --resume "$tmp/fp32/step-00000003"

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
read = lambda name: [json.loads(line) for line in open(os.path.join(tmp, name))]
failures = []

def close(name, run, ref, steps):
    if [r["step"] for r in run] != steps or [r["step"] for r in ref][-len(steps):] != steps:
        failures.append(f"{name}: steps {[r['step'] for r in run]}")
        return
    for r, want in zip(run, ref[-len(steps):]):
        for key in ("loss", "grad_norm"):
            if abs(r[key] - want[key]) > 1e-5 * abs(want[key]):
                failures.append(f"{name} step {r['step']} {key}: {r[key]} != {want[key]}")

close("2 ranks against 1", read("fp32.jsonl"), read("w1.jsonl"), list(range(1, 7)))
close("the 2-rank checkpoint resumed on 1 rank", read("fp32.w1.jsonl"), read("fp32.jsonl"), [4, 5, 6])
for dtype in ("fp32", "bf16"):
    full, resumed = read(f"{dtype}.jsonl"), read(f"{dtype}.resumed.jsonl")
    if [r["step"] for r in resumed] != [4, 5, 6] or len(full) != 6:
        failures.append(f"{dtype} resumed: steps {[r['step'] for r in resumed]}")
        continue
    for r, ref in zip(resumed, full[3:]):
        for key in ("loss", "grad_norm", "lr"):
            if r[key] != ref[key]:
                failures.append(f"{dtype} resumed step {r['step']} {key}: {r[key]} != {ref[key]}")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("train_small: 2 ranks as 1, resumed runs exact (fp32, bf16), the checkpoint on 1 rank close")
PY
