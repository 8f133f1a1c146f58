#!/bin/sh
# llama3-debug learns bytes of tinyshakespeare as well as the PyTorch reference: `fsdp
# train` on 2 fully sharded ranks and tools/llama_train_torch.py start from the same
# weights and read the same batches (parity_dump train writes them from the same flags),
# and their mean losses over the last 30 of 300 steps agree within 3%. Both must end well
# below the initial loss (ln 2048 = 7.6), and the first step's loss and every step's
# learning rate must agree closely, or the two runs did not start from the same place.
# Without ../shared/data/tinyshakespeare.txt beside the sources (a bare clone), the
# corpus of the sources stands in for it.
# Usage: llama_learning_test.sh path/to/parity_dump path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
DUMP=$1
shift
# 300 steps prove the mathematics, which the plain build covers; under a sanitizer they
# would take minutes of CI for nothing more.
if [ -n "${FSDP_SANITIZER:-}" ]; then
  echo "skipped: the learning comparison runs in the build without sanitizers"
  exit 77
fi
. "$(dirname "$0")/train_test_setup.sh"

data=$SRC/../shared/data/tinyshakespeare.txt
[ -r "$data" ] || data=$tmp/corpus.txt
echo "data: $data"
# 4 sequences of 64 bytes a step: 300 steps take about a minute a side on 2 cores.
flags="--model llama3-debug --data $data --global-batch-size 4 --seq-len 64 --steps 300 --lr 1e-3 \
  --min-lr 1e-4 --warmup 20 --weight-decay 0.1 --grad-clip 1.0 --seed 1234 --val-fraction 0.1"

start=$(date +%s)
# shellcheck disable=SC2086 # $flags is a list of flags
timeout 300 "$@" -np 2 "$FSDP" train $flags --log "$tmp/fsdp.jsonl" > "$tmp/fsdp.out" ||
  { tail -20 "$tmp/fsdp.out"; exit 1; }
mid=$(date +%s)
# shellcheck disable=SC2086
"$DUMP" "$tmp/start.bin" train $flags
timeout 300 "$PYTHON" "$SRC/tools/llama_train_torch.py" "$tmp/start.bin" "$tmp/torch.jsonl"
end=$(date +%s)
echo "fsdp train: $((mid - start)) s; parity_dump and PyTorch: $((end - mid)) s"

"$PYTHON" - "$tmp/fsdp.jsonl" "$tmp/torch.jsonl" <<'PY'
import json, math, sys
read = lambda p: [json.loads(line) for line in open(p)]
ours, torch = read(sys.argv[1]), read(sys.argv[2])
LAST, TOL = 30, 0.03
# Each side's loss is far below its start after 300 steps: 3.8 is half of ln 2048.
WELL_BELOW = 0.5 * math.log(2048)
failures = []
if len(ours) != 300 or len(torch) != 300:
    sys.exit(f"FAIL: expected 300 steps a side, got {len(ours)} (fsdp) and {len(torch)} (PyTorch)")
# One forward from the same weights on the same batch: the parity tests' 1e-4.
if abs(ours[0]["loss"] - torch[0]["loss"]) > 1e-4 * torch[0]["loss"]:
    failures.append(f"step 1 loss {ours[0]['loss']:.6f} != PyTorch's {torch[0]['loss']:.6f}: not the same start")
for a, b in zip(ours, torch):
    if abs(a["lr"] - b["lr"]) > 1e-6 * b["lr"]:
        failures.append(f"step {a['step']} lr {a['lr']:.6g} != PyTorch's {b['lr']:.6g}")
        break
mean = lambda run: sum(r["loss"] for r in run[-LAST:]) / LAST
m_ours, m_torch = mean(ours), mean(torch)
diff = abs(m_ours - m_torch) / m_torch
worst = max(abs(a["loss"] - b["loss"]) for a, b in zip(ours, torch))
print(f"llama3-debug, 300 steps: initial loss {ours[0]['loss']:.6f} (fsdp) {torch[0]['loss']:.6f} (PyTorch); "
      f"last-{LAST} mean loss {m_ours:.6f} (fsdp, W=2) {m_torch:.6f} (PyTorch), difference {100 * diff:.4f}%; "
      f"largest difference of one step's losses {worst:.2e}")
if not diff <= TOL:
    failures.append(f"last-{LAST} means differ by {100 * diff:.2f}%, more than {100 * TOL:.0f}%")
for name, m in (("fsdp", m_ours), ("PyTorch", m_torch)):
    if not m < WELL_BELOW:
        failures.append(f"{name} did not learn: last-{LAST} mean {m:.4f} is not below {WELL_BELOW:.2f}")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
PY
