#!/bin/sh
# bf16 compute gives the same training on 1, 2 and 3 ranks (issue 21): gpt2-tiny and
# llama3-debug (2 layers), the same global batch of 6 sequences, 10 steps with
# --param-dtype bf16, every step's loss within 1e-3 of the one-rank run's.
#
# The ranks cannot give the same bits: each rounds the gradient of its own rows to bf16
# (the unsharded gradients are bf16) before the fp32 reduce-scatter adds them, where one
# rank rounds the sum once. In the first step that is all: each element is off by the
# roundings of the W partial sums that made it, each within u of its partial (u = 2^-8,
# bf16's unit roundoff), and the grad norm averages them over every element: within u
# (measured: 1.5e-3 at most, llama3-debug at W = 3). From the second step on, AdamW
# divides each gradient by its running magnitude, so an element whose gradient's sign is
# within rounding of zero steps by lr one way on one world size and the other way on
# another, and the grad norms drift apart step after step by more than the rounding that
# started it (2.5e-3 at most, measured), which 1e-2 bounds; the losses stay within 3e-5.
# Usage: bf16_ranks_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"

for model in "gpt2-tiny" "llama3-debug --n-layer 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ffn-hidden 96 --vocab-size 256"; do
  name=${model%% *}
  for w in 1 2 3; do
    # shellcheck disable=SC2086 # $model is a list of flags
    timeout 300 "$@" -np "$w" "$FSDP" train --model $model --data "$tmp/corpus.txt" --global-batch-size 6 \
      --seq-len 64 --steps 10 --param-dtype bf16 --peak-gflops 100 --log "$tmp/$name-w$w.jsonl" > "$tmp/out.txt" ||
      { tail -20 "$tmp/out.txt"; exit 1; }
  done
done

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
LOSS_TOL, FIRST_NORM_TOL, NORM_TOL = 1e-3, 2.0**-8, 1e-2
failures = []
for model in ("gpt2-tiny", "llama3-debug"):
    runs = {w: [json.loads(line) for line in open(os.path.join(tmp, f"{model}-w{w}.jsonl"))] for w in (1, 2, 3)}
    for w in (2, 3):
        if len(runs[w]) != 10:
            failures.append(f"{model} W={w}: {len(runs[w])} steps logged, not 10")
            continue
        rel = lambda key, a, b: abs(a[key] - b[key]) / abs(b[key])
        loss = max(rel("loss", a, b) for a, b in zip(runs[w], runs[1]))
        first = rel("grad_norm", runs[w][0], runs[1][0])
        norm = max(rel("grad_norm", a, b) for a, b in zip(runs[w], runs[1]))
        print(f"{model} bf16, W={w} against W=1 over 10 steps: losses within {loss:.1e}, "
              f"grad norms {first:.1e} (step 1) and {norm:.1e}")
        for what, err, tol in (("loss", loss, LOSS_TOL), ("step 1 grad norm", first, FIRST_NORM_TOL),
                               ("grad norm", norm, NORM_TOL)):
            if not err <= tol:
                failures.append(f"{model} W={w}: {what} off W=1's by {err:.2e}, more than {tol}")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
PY
