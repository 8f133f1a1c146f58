#!/bin/sh
# `fsdp plan` is exact: for each configuration, of GPT-2 and of Llama 3, every category's
# tracked peak in the second step of `fsdp train` (rank 0's, from the JSON log) and the
# peak of the total equal, to the byte, what the plan printed before anything was
# allocated, at W = 1, 2 and 4. The plan allocates nothing of the model: GPT-2 XL's 24 GiB
# of state and Llama 3 8B's 120 GiB are planned within a 1 GiB address-space limit. And
# Llama 3 8B's model state over 8 and 64 ranks is 16 bytes a parameter (fp32 parameters,
# gradients and two AdamW moments) over W, plus each unit's padding to W x 16 elements.
# Usage: plan_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"

n=0
GPT2="--model gpt2-tiny --n-layer 4 --n-embd 64 --n-head 4"
LLAMA="--model llama3-debug --n-layer 3 --n-embd 64 --n-head 4 --n-kv-head 2 --ffn-hidden 96 --vocab-size 256"
check() {  # check RANKS MODEL [FLAGS...]: plan, train, compare
  ranks=$1
  model=$2
  shift 2
  n=$((n + 1))
  common="$model --seq-len 32 --batch-size 4 --steps 2 --data $tmp/corpus.txt $*"
  # shellcheck disable=SC2086
  "$FSDP" plan --world-size "$ranks" --format json $common > "$tmp/plan$n.json"
  # shellcheck disable=SC2086
  timeout 300 $MPIRUN -np "$ranks" "$FSDP" train $common --log "$tmp/train$n.jsonl" \
    > "$tmp/out$n.txt"
  echo "$ranks $model $*" > "$tmp/config$n.txt"
}

MPIRUN="$*"
# The sanitizers reserve terabytes of address space for their shadow memory.
if [ -z "${FSDP_SANITIZER:-}" ]; then
  for model in gpt2-xl llama3-8b; do
    if ! (ulimit -v 1048576 && "$FSDP" plan --model $model --world-size 1 > "$tmp/big.txt"); then
      echo "FAIL: planning $model needed more than 1 GiB of address space"
      exit 1
    fi
    grep -q "total (peak)" "$tmp/big.txt" || { echo "FAIL: no plan for $model"; cat "$tmp/big.txt"; exit 1; }
  done
fi
for w in 8 64; do
  "$FSDP" plan --model llama3-8b --world-size $w --format json > "$tmp/llama3-8b-w$w.json"
  "$FSDP" plan --model llama3-8b --world-size $w > "$tmp/llama3-8b-w$w.txt"
done
for w in 1 2 4; do
  check "$w" "$GPT2"
  check "$w" "$GPT2" --sharding grad-op --ac full
  check "$w" "$GPT2" --sharding none --param-dtype bf16
  check "$w" "$GPT2" --ac every:2 --param-dtype bf16 --reduce-dtype bf16
  check "$w" "$GPT2" --grad-accum 2 --accum-mode no-sync --prefetch 2 --max-unsharded 3
  check "$w" "$GPT2" --grad-accum 2 --accum-mode sharded --param-dtype fp16 --overlap off
  check "$w" "$LLAMA"
  check "$w" "$LLAMA" --sharding grad-op --ac every:2 --param-dtype bf16
done
# A vocabulary off the loss's padding to 128 (src/models/decoder_loss.c): the padded copies of
# the head and its gradient are planned too.
check 2 "$GPT2" --vocab-size 300 --param-dtype bf16

"$PYTHON" - "$tmp" "$n" <<'PY'
import json, sys, os
tmp, count = sys.argv[1], int(sys.argv[2])
failures = 0
for i in range(1, count + 1):
    config = open(os.path.join(tmp, f"config{i}.txt")).read().strip()
    plan = json.load(open(os.path.join(tmp, f"plan{i}.json")))
    step2 = [json.loads(l) for l in open(os.path.join(tmp, f"train{i}.jsonl"))][1]
    tracked = step2["mem_peak_bytes_by_category"]
    rows = [(c, plan["peak_bytes"][c], tracked[c]) for c in plan["peak_bytes"]]
    rows.append(("total", plan["total_peak_bytes"], step2["mem_peak_bytes_rank0"]))
    for name, planned, real in rows:
        if planned != real:
            failures += 1
            print(f"FAIL W={config}: {name} planned {planned} bytes, tracked {real}")
    print(f"ok W={config}: total planned {plan['total_peak_bytes']}, tracked {step2['mem_peak_bytes_rank0']}")

# Llama 3 8B under the block policy: the embedding, 32 blocks (two RMSNorms, wq and wo
# 4096 x 4096, wk and wv 1024 x 4096, w1 w3 w2 14336 x 4096), the final RMSNorm and the
# output projection, each a unit padded to W x 16.
C, V, F, KV, L = 4096, 128256, 14336, 1024, 32
units = [V * C] + [2 * C + 2 * C * C + 2 * KV * C + 3 * F * C] * L + [C, V * C]
for w in (8, 64):
    plan = json.load(open(os.path.join(tmp, f"llama3-8b-w{w}.json")))
    text = open(os.path.join(tmp, f"llama3-8b-w{w}.txt")).read()
    peak = plan["peak_bytes"]
    state = peak["sharded_params"] + peak["sharded_grads"] + peak["optimizer"]
    granule = 16 * w
    expected = 16 * sum((n + granule - 1) // granule * granule for n in units) // w
    if plan["parameters"] != sum(units) or sum(units) != 8030261248:
        failures += 1
        print(f"FAIL llama3-8b: {plan['parameters']} parameters, expected {sum(units)} (Llama 3.1 8B's 8030261248)")
    if state != expected:
        failures += 1
        print(f"FAIL llama3-8b W={w}: model state {state} bytes, expected {expected}")
    per_param = f"= {16 / w:.2f} bytes per parameter"
    if per_param not in text:
        failures += 1
        print(f"FAIL llama3-8b W={w}: the plan does not say '{per_param}':\n{text}")
    print(f"ok llama3-8b W={w}: model state {state} bytes = 16 x {sum(units)} / {w} + {state - 16 * sum(units) // w} padding")
sys.exit(1 if failures else 0)
PY
