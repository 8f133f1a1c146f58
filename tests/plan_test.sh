#!/bin/sh
# `fsdp plan` is exact: for each configuration, every category's tracked peak in the
# second step of `fsdp train` (rank 0's, from the JSON log) and the peak of the total
# equal, to the byte, what the plan printed before anything was allocated, at W = 1, 2
# and 4. And the plan allocates nothing of the model: GPT-2 XL's 24 GiB of state is
# planned within a 1 GiB address-space limit.
# Usage: plan_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"

n=0
check() {  # check RANKS [FLAGS...]: plan, train, compare
  ranks=$1
  shift
  n=$((n + 1))
  common="--model gpt2-tiny --n-layer 4 --n-embd 64 --n-head 4 --seq-len 32 --batch-size 4 --steps 2 \
    --data $tmp/corpus.txt $*"
  # shellcheck disable=SC2086
  "$FSDP" plan --world-size "$ranks" --format json $common > "$tmp/plan$n.json"
  # shellcheck disable=SC2086
  timeout 300 $MPIRUN -np "$ranks" "$FSDP" train $common --log "$tmp/train$n.jsonl" \
    > "$tmp/out$n.txt"
  echo "$ranks $*" > "$tmp/config$n.txt"
}

MPIRUN="$*"
# The sanitizers reserve terabytes of address space for their shadow memory.
if [ -z "${FSDP_SANITIZER:-}" ]; then
  if ! (ulimit -v 1048576 && "$FSDP" plan --model gpt2-xl --world-size 1 > "$tmp/xl.txt"); then
    echo "FAIL: planning gpt2-xl needed more than 1 GiB of address space"
    exit 1
  fi
  grep -q "total (peak)" "$tmp/xl.txt" || { echo "FAIL: no plan for gpt2-xl"; cat "$tmp/xl.txt"; exit 1; }
fi
for w in 1 2 4; do
  check "$w"
  check "$w" --sharding grad-op --ac full
  check "$w" --sharding none --param-dtype bf16
  check "$w" --ac every:2 --param-dtype bf16 --reduce-dtype bf16
  check "$w" --grad-accum 2 --accum-mode no-sync --prefetch 2 --max-unsharded 3
  check "$w" --grad-accum 2 --accum-mode sharded --param-dtype fp16 --overlap off
done

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
sys.exit(1 if failures else 0)
PY
