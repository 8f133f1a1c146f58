#!/bin/sh
# Resume is exact, and a checkpoint reshards. For each configuration a 40-step run
# writes checkpoints at steps 20 and 40; a new job resumed from step 20 must log steps
# 21..40 exactly as the uninterrupted run did (every loss, grad norm, lr, val loss and
# loss scale ==): full, grad-op and none sharding, activation checkpointing, bf16, fp16
# (its loss scale, which starts far too high here, restored mid-descent), and
# accumulation over 2 micro-batches, sharded and no-sync. Then the checkpoints of
# 2 ranks (full) and 4 ranks (none, HSDP 2x2) resume on 1, 3 and 4 ranks and 2 ranks
# under other strategies, meshes and wrap policies, within 1e-5 of the uninterrupted run. The same global batch everywhere.
# Usage: checkpoint_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
MPIRUN="$*"

train() {  # train RANKS LOG [ARGS...]
  ranks=$1 log=$2
  shift 2
  timeout 300 $MPIRUN -np "$ranks" "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 \
    --seq-len 32 --global-batch-size 12 --steps 40 --lr 2e-3 --warmup 4 --data "$tmp/corpus.txt" \
    --val-every 10 --val-batches 2 --log "$log" "$@" > "$tmp/out.txt" 2>&1 || {
    echo "FAIL: fsdp train $* exited non-zero"; cat "$tmp/out.txt"; exit 1; }
}

# exact NAME RANKS ARGS...: the uninterrupted run, then the resumed one.
exact() {
  name=$1 ranks=$2
  shift 2
  train "$ranks" "$tmp/$name.full.jsonl" --checkpoint-dir "$tmp/$name" --checkpoint-every 20 "$@"
  train "$ranks" "$tmp/$name.resumed.jsonl" --resume "$tmp/$name/step-00000020" "$@"
  grep -q "resume: from '$tmp/$name/step-00000020' at step 20" "$tmp/out.txt" || {
    echo "FAIL: $name: no resume line"; cat "$tmp/out.txt"; exit 1; }
}

exact full 2 --sharding full
exact grad-op 2 --sharding grad-op
exact none 2 --sharding none
exact ac 2 --ac full
exact bf16 2 --param-dtype bf16
exact fp16 2 --param-dtype fp16 --loss-scale 1e9
exact accum 2 --grad-accum 2
exact accum-no-sync 2 --grad-accum 2 --accum-mode no-sync
exact none-w4 4 --sharding none
exact hsdp-w4 4 --mesh 2,2

# reshard NAME RANKS FROM ARGS...: checkpoint FROM's step 20 resumed on RANKS.
reshard() {
  name=$1 ranks=$2 from=$3
  shift 3
  train "$ranks" "$tmp/reshard-$name.jsonl" --resume "$tmp/$from/step-00000020" "$@"
}
reshard w2-to-w1 1 full
reshard w2-to-w3-grad-op 3 full --sharding grad-op
reshard w2-to-w4-none 4 full --sharding none
reshard w2-to-w3-accum 3 full --grad-accum 2
reshard w4-none-to-w2-full 2 none-w4 --sharding full
reshard w4-hsdp-to-w2 2 hsdp-w4
reshard w2-to-w4-hsdp 4 full --mesh 2,2
reshard w2-to-w1-wrap-none 1 full --wrap none
reshard w2-to-w3-wrap-size 3 full --wrap size:20K --reshard-after-forward true

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
read = lambda name: [json.loads(line) for line in open(os.path.join(tmp, name))]
failures = []
keys = ("loss", "grad_norm", "lr", "val_loss", "loss_scale", "skipped")
for name in ("full", "grad-op", "none", "ac", "bf16", "fp16", "accum", "accum-no-sync", "none-w4", "hsdp-w4"):
    full, resumed = read(f"{name}.full.jsonl"), read(f"{name}.resumed.jsonl")
    if [r["step"] for r in resumed] != list(range(21, 41)) or len(full) != 40:
        failures.append(f"{name}: steps {[r['step'] for r in resumed]}")
        continue
    for r, ref in zip(resumed, full[20:]):
        for key in keys:
            if r.get(key) != ref.get(key):
                failures.append(f"{name} step {r['step']} {key}: resumed {r.get(key)} != {ref.get(key)}")
    if name == "fp16":
        at20 = full[19]["loss_scale"]
        skipped = sum(r["skipped"] for r in full[:20])
        if not (skipped >= 3 and at20 < 1e9):
            failures.append(f"fp16: the loss scale was not exercised ({skipped} skipped, scale {at20})")
for name, source in (("w2-to-w1", "full"), ("w2-to-w3-grad-op", "full"), ("w2-to-w4-none", "full"),
                     ("w2-to-w3-accum", "full"), ("w4-none-to-w2-full", "none-w4"),
                     ("w4-hsdp-to-w2", "hsdp-w4"), ("w2-to-w4-hsdp", "full"), ("w2-to-w1-wrap-none", "full"),
                     ("w2-to-w3-wrap-size", "full")):
    run, ref = read(f"reshard-{name}.jsonl"), read(f"{source}.full.jsonl")[20:]
    if [r["step"] for r in run] != list(range(21, 41)):
        failures.append(f"reshard {name}: steps {[r['step'] for r in run]}")
        continue
    worst = 0.0
    for r, x in zip(run, ref):
        for key in ("loss", "grad_norm"):
            err = abs(r[key] - x[key]) / abs(x[key])
            worst = max(worst, err)
            if err > 1e-5:
                failures.append(f"reshard {name} step {r['step']} {key}: {r[key]} vs {x[key]} ({err:.2e} relative)")
    print(f"reshard {name}: steps 21..40 within {worst:.1e} of the uninterrupted run")
print("resume exact (==) for full, grad-op, none, ac, bf16, fp16, accum sharded and no-sync, none and HSDP 2x2 at W=4")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures[:30]))
    sys.exit(1)
PY
