#!/bin/sh
# Streamed shards, llm.c's way: three llm.c train shards named by a glob and a val shard
# (--val-data), 40 steps of 2 ranks crossing shard boundaries and three epochs. Then:
# - the epoch in every JSONL line is the one its first window falls in (151 windows an epoch);
# - resumed from step 12 (its global batch straddles the first epoch's end) on the same 2
#   ranks, steps 13..40 log exactly (==) what the uninterrupted run did: loss, grad norm,
#   lr, val loss, epoch;
# - resumed from step 12 on 3 ranks, from step 18 on 4 (HSDP 2x2) and from step 6 on 1
#   rank with --grad-accum 3: the same global batches, so the losses and grad norms follow
#   the uninterrupted run within 1e-5 (the sums' order differs), the epochs ==;
# - --data-io mmap reads the same windows as pread (==);
# - fsdp eval over every window of the shards (no --batches) gives one loss on 1, 2 and
#   3 ranks (3: a last global batch of its windows padded), with the model flags training
#   took (--model gpt2-tiny --n-embd 64 --vocab-size 320) beside --checkpoint, and sample
#   and export take them too; the preset alone is refused naming the resolved difference.
# Usage: data_shards_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
MPIRUN="$*"

mkdir "$tmp/shards"
"$PYTHON" - "$tmp/corpus.txt" "$tmp/shards" <<'PY'
import sys
text = open(sys.argv[1], "rb").read()
def llmc(path, tokens):  # llm.c's GPT-2 file: magic, version 1, count; then uint16 ids
    header = [20240520, 1, len(tokens)] + [0] * 253
    with open(path, "wb") as f:
        f.write(b"".join(i.to_bytes(4, "little") for i in header))
        f.write(b"".join(t.to_bytes(2, "little") for t in tokens))
at = 0
for name, n in (("fineweb_train_000001.bin", 1500), ("fineweb_train_000002.bin", 2300),
                ("fineweb_train_000003.bin", 1100), ("fineweb_val_000000.bin", 2000)):
    llmc(f"{sys.argv[2]}/{name}", list(text[at:at + n]))
    at += n
PY
set -f # the globs below are fsdp's to expand
MODEL="--model gpt2-tiny --n-embd 64 --vocab-size 320"
DATA="--data $tmp/shards/fineweb_train_*.bin --val-data $tmp/shards/fineweb_val_000000.bin"

train() {  # train RANKS LOG [ARGS...]
  ranks=$1 log=$2
  shift 2
  timeout 300 $MPIRUN -np "$ranks" "$FSDP" train $MODEL --seq-len 32 --global-batch-size 12 --steps 40 --lr 2e-3 \
    --warmup 4 $DATA --val-every 10 --val-batches 2 --log "$log" "$@" > "$tmp/out.txt" 2>&1 || {
    echo "FAIL: fsdp train $* exited non-zero"; cat "$tmp/out.txt"; exit 1; }
}

train 2 "$tmp/full.jsonl" --checkpoint-dir "$tmp/ckpt" --checkpoint-every 6
grep -q "data: 3 shard(s) of uint16 (streamed), 4900 tokens: 4900 in training, 151 windows of 32 + 1 tokens an epoch" \
  "$tmp/out.txt" || { echo "FAIL: no data line"; cat "$tmp/out.txt"; exit 1; }
grep -q '"epoch_window":.144' "$tmp/ckpt/step-00000012/metadata.json" ||
  { echo "FAIL: step 12's metadata lacks its data position"; grep -A5 data_position "$tmp/ckpt/step-00000012/metadata.json"; exit 1; }
train 2 "$tmp/same-w.jsonl" --resume "$tmp/ckpt/step-00000012"
grep -q "resume: data from epoch 0, window 144 of its 151 (shard 'fineweb_train_" "$tmp/out.txt" ||
  { echo "FAIL: no data resume line"; cat "$tmp/out.txt"; exit 1; }
train 3 "$tmp/w3.jsonl" --resume "$tmp/ckpt/step-00000012"
train 4 "$tmp/hsdp.jsonl" --resume "$tmp/ckpt/step-00000018" --mesh 2,2
train 1 "$tmp/w1-accum.jsonl" --resume "$tmp/ckpt/step-00000006" --grad-accum 3
train 2 "$tmp/mmap.jsonl" --data-io mmap

step=$tmp/ckpt/step-00000040
evaluate() {  # evaluate RANKS OUT
  timeout 300 $MPIRUN -np "$1" "$FSDP" eval --checkpoint "$step" $MODEL --data "$tmp/shards/fineweb_train_*.bin" \
    --seq-len 32 --batch-size 4 > "$2" 2> "$tmp/eval.err" || { echo "FAIL: eval on $1 ranks"; cat "$tmp/eval.err"; exit 1; }
}
evaluate 1 "$tmp/eval1.json"
evaluate 2 "$tmp/eval2.json"
evaluate 3 "$tmp/eval3.json"
timeout 60 $MPIRUN -np 1 "$FSDP" sample --checkpoint "$step" $MODEL --prompt-tokens 84,111 --max-new-tokens 4 \
  --temperature 0 > "$tmp/sample.txt" 2>&1 || { echo "FAIL: sample with the model flags"; cat "$tmp/sample.txt"; exit 1; }
timeout 60 $MPIRUN -np 1 "$FSDP" export --checkpoint "$step" $MODEL -o "$tmp/hf" > "$tmp/export.txt" 2>&1 ||
  { echo "FAIL: export with the model flags"; cat "$tmp/export.txt"; exit 1; }
expect_error() {  # expect_error TEXT ARGS...
  text=$1
  shift
  if timeout 60 $MPIRUN -np 1 "$FSDP" "$@" > "$tmp/err.txt" 2>&1; then echo "FAIL: $* succeeded"; exit 1; fi
  grep -qF -- "$text" "$tmp/err.txt" || { echo "FAIL: $*: no '$text' in:"; cat "$tmp/err.txt"; exit 1; }
}
expect_error "--model gpt2-tiny disagrees with --checkpoint's metadata.json: n_embd 128 here, 64 there" \
  eval --checkpoint "$step" --model gpt2-tiny --data "$tmp/shards/fineweb_val_000000.bin" --seq-len 32
expect_error "--model gpt2-tiny --n-embd 64 --vocab-size 2048 disagrees with --checkpoint's metadata.json: vocab_size 2048 here, 320 there" \
  export --checkpoint "$step" --model gpt2-tiny --n-embd 64 --vocab-size 2048 -o "$tmp/x"

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
read = lambda name: [json.loads(line) for line in open(os.path.join(tmp, name))]
failures = []
full = read("full.jsonl")
E, G = 151, 12
epochs = [r["epoch"] for r in full]
want = [(s - 1) * G // E for s in range(1, 41)]
if epochs != want:
    failures.append(f"epochs {epochs}, want {want}")
keys = ("loss", "grad_norm", "lr", "val_loss", "epoch")
def check(name, first, exact):
    run = read(f"{name}.jsonl")
    if [r["step"] for r in run] != list(range(first, 41)):
        failures.append(f"{name}: steps {[r['step'] for r in run]}")
        return
    worst = 0.0
    for r, ref in zip(run, full[first - 1:]):
        for key in keys:
            a, b = r.get(key), ref.get(key)
            if exact or key in ("lr", "epoch") or a is None or b is None:
                if a != b:
                    failures.append(f"{name} step {r['step']} {key}: {a} != {b}")
            else:
                err = abs(a - b) / abs(b)
                worst = max(worst, err)
                if err > 1e-5:
                    failures.append(f"{name} step {r['step']} {key}: {a} vs {b} ({err:.1e} relative)")
    print(f"{name}: steps {first}..40 " + ("==" if exact else f"within {worst:.1e}") + " of the uninterrupted run")
check("same-w", 13, True)
check("w3", 13, False)
check("hsdp", 19, False)
check("w1-accum", 7, False)
mmap = read("mmap.jsonl")
for r, ref in zip(mmap, full):
    for key in ("loss", "grad_norm", "val_loss"):
        if r.get(key) != ref.get(key):
            failures.append(f"mmap step {r['step']} {key}: {r.get(key)} != {ref.get(key)}")
print("mmap: steps 1..40 == pread's")
evals = [json.loads(open(os.path.join(tmp, f"eval{w}.json")).read().strip().splitlines()[-1]) for w in (1, 2, 3)]
print("eval of every window: " + ", ".join(f"W={w} {e['loss']:.7f} ({e['windows']} windows)" for w, e in zip((1, 2, 3), evals)))
if any(e["windows"] != E for e in evals):
    failures.append(f"eval windows {[e['windows'] for e in evals]}, want {E}")
worst = max(abs(e["loss"] - evals[0]["loss"]) / evals[0]["loss"] for e in evals)
if worst > 1e-6:
    failures.append(f"eval losses differ by {worst:.1e} relative")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures[:30]))
    sys.exit(1)
PY
