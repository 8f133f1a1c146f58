#!/bin/sh
# A training checkpoint is a source of weights for eval, export and sample: `fsdp eval
# --checkpoint` gives the same loss on 1 and 3 ranks as on the 2 that trained, and the
# same as `fsdp eval --init-from` an export of that checkpoint; greedy `fsdp sample
# --checkpoint` runs; a model flag that disagrees with the checkpoint, or both sources at
# once, is refused naming the flag, and a step folder named for another step by its name.
# Usage: checkpoint_weights_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
MPIRUN="$*"
model="--model llama3-debug --n-layer 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ffn-hidden 96 --vocab-size 256"

timeout 300 $MPIRUN -np 2 "$FSDP" train $model --seq-len 32 --global-batch-size 4 --steps 6 --data "$tmp/corpus.txt" \
  --val-every 0 --checkpoint-dir "$tmp/ckpt" > "$tmp/train.txt" 2>&1 || { cat "$tmp/train.txt"; exit 1; }
step="$tmp/ckpt/step-00000006"

evaluate() {  # evaluate RANKS OUT SOURCE_FLAG PATH
  timeout 300 $MPIRUN -np "$1" "$FSDP" eval --data "$tmp/corpus.txt" --seq-len 32 --batch-size 2 --batches 6 \
    "$3" "$4" > "$2" 2> "$tmp/eval.err" || { echo "FAIL: eval $3 on $1 ranks"; cat "$tmp/eval.err"; exit 1; }
}
evaluate 1 "$tmp/w1.json" --checkpoint "$step"
evaluate 2 "$tmp/w2.json" --checkpoint "$step"
evaluate 3 "$tmp/w3.json" --checkpoint "$step"
timeout 300 $MPIRUN -np 2 "$FSDP" export --checkpoint "$step" -o "$tmp/hf" > "$tmp/export.txt" 2>&1 ||
  { echo "FAIL: export --checkpoint"; cat "$tmp/export.txt"; exit 1; }
evaluate 2 "$tmp/hf.json" --init-from "$tmp/hf"
timeout 60 $MPIRUN -np 1 "$FSDP" sample --checkpoint "$step" --prompt "int " --max-new-tokens 8 --temperature 0 \
  > "$tmp/sample.txt" 2> "$tmp/sample.err" || { echo "FAIL: sample --checkpoint"; cat "$tmp/sample.err"; exit 1; }

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
loss = {n: json.loads(open(os.path.join(tmp, f"{n}.json")).read().strip().splitlines()[-1])["loss"]
        for n in ("w1", "w2", "w3", "hf")}
print("eval --checkpoint: W=1 %.7f W=2 %.7f W=3 %.7f; --init-from its export %.7f" % tuple(loss.values()))
worst = max(abs(v - loss["w2"]) / loss["w2"] for v in loss.values())
if worst > 1e-6:
    sys.exit(f"FAIL: the losses differ by {worst:.2e} relative")
if len(open(os.path.join(tmp, "sample.txt"), "rb").read()) == 0:
    sys.exit("FAIL: sample --checkpoint printed nothing")
PY

expect_error() {  # expect_error TEXT ARGS...
  text=$1
  shift
  if timeout 60 $MPIRUN -np 1 "$FSDP" "$@" > "$tmp/err.txt" 2>&1; then echo "FAIL: $* succeeded"; exit 1; fi
  grep -qF -- "$text" "$tmp/err.txt" || { echo "FAIL: $*: no '$text' in:"; cat "$tmp/err.txt"; exit 1; }
}
expect_error "--n-layer 3 disagrees with --checkpoint's metadata.json" eval --data "$tmp/corpus.txt" --batches 1 \
  --checkpoint "$step" --n-layer 3
expect_error "--checkpoint and --init-from: give one source of weights" eval --data "$tmp/corpus.txt" --batches 1 \
  --checkpoint "$step" --init-from "$tmp/hf"
expect_error "checkpoint '$tmp/ckpt/step-00000007': no such directory" export --checkpoint "$tmp/ckpt/step-00000007" \
  -o "$tmp/out"
expect_error "checkpoint '$tmp/corpus.txt' is a file: a checkpoint is a step's folder" export --checkpoint "$tmp/corpus.txt" \
  -o "$tmp/out"
# --checkpoint-dir's folder, not one of its steps (main called it an interrupted checkpoint).
expect_error "checkpoint '$tmp/ckpt' is a folder of checkpoints, not one: give one of its steps, such as its newest complete one, '$step'" \
  eval --data "$tmp/corpus.txt" --batches 1 --checkpoint "$tmp/ckpt"
expect_error "checkpoint '$tmp/ckpt' is a folder of checkpoints" sample --checkpoint "$tmp/ckpt" --prompt "int "
# A step folder that names another step than it holds (a copy or link to an older one).
mkdir "$tmp/renamed"
cp -r "$tmp/ckpt/step-00000006" "$tmp/renamed/step-00000009"
for command in "eval --data $tmp/corpus.txt --batches 1" "export -o $tmp/out" "sample --prompt int"; do
  expect_error "checkpoint '$tmp/renamed/step-00000009' holds step 6, not the step 9 its name says" $command \
    --checkpoint "$tmp/renamed/step-00000009"
done
echo "ok"
