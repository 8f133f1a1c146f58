#!/usr/bin/env bash
# fsdp.c against PyTorch in one process on the CPU (W=1), the same model, B, T, data and
# N threads for both:
#   step time: `fsdp train` in fp32 against PyTorch eager fp32, and `fsdp train
#     --param-dtype bf16` against torch.compile + autocast bf16 (bench/torch_train.py, on
#     tools/gpt2_torch.py or tools/llama_torch.py);
#   GEMM GFLOP/s (GPT-2 models only): a step's linear-layer products (forward, dinp,
#     dweight, with the bias) by fsdp.c's nn_matmul (bench/cpu_matmul.c) and by PyTorch
#     (bench/torch_matmul.py), in fp32 and bf16.
# Models (--model, `fsdp train`'s presets): shakespeare-char (6 layers, 6 heads, 384 wide,
# vocabulary 256; B=8 T=256 by default), gpt2 (GPT-2 124M: 12, 12, 768, 50257; B=4) and
# llama3-debug (6 layers, 16 heads, 256 wide, SwiGLU 768, vocabulary 2048; B=8). Every model
# reads the text's bytes as tokens: ids below 256, valid input for the larger vocabularies
# (not what those models were made for, but a step costs the same: a speed benchmark).
# Each figure is a run's median (over the steps after the first K, or over a product's
# repeats), then the median over R rounds that run every program in turn.
#
# Usage: bench/cpu_vs_pytorch.sh [--model NAME] [--batch B] [--seq-len T] [--threads N]
#            [--rounds R] [--steps S] [--warmup K] [--data FILE] [--build DIR] [--keep-logs]
# Defaults: shakespeare-char, T = 256, N = nproc, R = 3, S = 12, K = 4 (torch.compile
# compiles in its first steps), build/ for fsdp and bench/cpu_matmul. PyTorch is PyPI's,
# from bench/torch_venv.sh. A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
THREADS="$(nproc)" ROUNDS=3 STEPS=12 WARMUP=4 KEEP=0
MODEL=shakespeare-char BATCH="" SEQ=256

while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --batch) BATCH="$2"; shift 2 ;;
    --seq-len) SEQ="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done

# The model's shape for the GEMMs (GPT-2's linear layers: C, L, V), and its default batch.
case "$MODEL" in
  shakespeare-char) GEMM_SHAPE=(--n-embd 384 --n-layer 6 --vocab-size 256) DEFAULT_BATCH=8 ;;
  gpt2) GEMM_SHAPE=(--n-embd 768 --n-layer 12 --vocab-size 50257) DEFAULT_BATCH=4 ;;
  llama3-debug) GEMM_SHAPE=() DEFAULT_BATCH=8 ;;
  *) echo "--model: '$MODEL' is none of shakespeare-char, gpt2, llama3-debug" >&2; exit 2 ;;
esac
BATCH="${BATCH:-$DEFAULT_BATCH}"
GEMM_SHAPE+=(--rows "$((BATCH * SEQ))")

FSDP="$BUILD/fsdp" MATMUL="$BUILD/bench/cpu_matmul"
for exe in "$FSDP" "$MATMUL"; do
  [ -x "$exe" ] || { echo "no $exe: build first (scripts/build.sh $BUILD)" >&2; exit 1; }
done
[ -r "$DATA" ] || { echo "no data file $DATA (--data FILE)" >&2; exit 1; }
[ "$STEPS" -gt "$WARMUP" ] || { echo "--steps must be > --warmup ($WARMUP)" >&2; exit 2; }
TORCH_PY="$("$ROOT/bench/torch_venv.sh")"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-cpu-bench.XXXXXX")"
if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi
export OMP_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"

# The cores are shared with other jobs: the load average before the first round and after each.
cut -d' ' -f1 /proc/loadavg >"$TMP/load_r0"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS ..." >&2
  for dtype in fp32 bf16; do
    "$FSDP" train --model "$MODEL" --data "$DATA" --batch-size "$BATCH" --seq-len "$SEQ" --steps "$STEPS" \
      --param-dtype "$dtype" --log "$TMP/ours_${dtype}_r$r.jsonl" >"$TMP/ours_${dtype}_r$r.out" 2>&1 ||
      { echo "fsdp train ($dtype) failed:" >&2; tail -20 "$TMP/ours_${dtype}_r$r.out" >&2; exit 1; }
    torch_flags=()
    [ "$dtype" = bf16 ] && torch_flags=(--compile --autocast-bf16)
    "$TORCH_PY" "$ROOT/bench/torch_train.py" --model "$MODEL" --seq-len "$SEQ" --batch-size "$BATCH" --steps "$STEPS" \
      --warmup "$WARMUP" --threads "$THREADS" --data "$DATA" --quiet --json "$TMP/torch_${dtype}_r$r.json" \
      "${torch_flags[@]}" >"$TMP/torch_${dtype}_r$r.out" 2>&1 ||
      { echo "torch_train.py ($dtype) failed:" >&2; tail -20 "$TMP/torch_${dtype}_r$r.out" >&2; exit 1; }
    [ "$MODEL" = llama3-debug ] && continue
    "$MATMUL" "${GEMM_SHAPE[@]}" --dtype "$dtype" | tail -n 1 >"$TMP/ours_gemm_${dtype}_r$r.json"
    "$TORCH_PY" "$ROOT/bench/torch_matmul.py" "${GEMM_SHAPE[@]}" --dtype "$dtype" --threads "$THREADS" | tail -n 1 \
      >"$TMP/torch_gemm_${dtype}_r$r.json"
  done
  cut -d' ' -f1 /proc/loadavg >"$TMP/load_r$r"
done

echo "== fsdp.c against PyTorch $("$TORCH_PY" -c 'import torch; print(torch.__version__)'), one process, $THREADS threads:"
echo "   $MODEL, B=$BATCH T=$SEQ; machine: $(nproc) cores,"
echo "   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -I)"
echo "   step: median of steps $((WARMUP + 1))..$STEPS; GEMM: a step's linear-layer products; then the median of $ROUNDS rounds"
echo
/usr/bin/python3 - "$TMP" "$WARMUP" "$ROUNDS" "$MODEL" <<'PYEOF'
import json, statistics as st, sys
tmp, warm, rounds, model = sys.argv[1], int(sys.argv[2]), range(1, int(sys.argv[3]) + 1), sys.argv[4]
def ours_ms(d, r):
    rows = [json.loads(l) for l in open(f"{tmp}/ours_{d}_r{r}.jsonl") if l.strip()]
    return st.median(x["step_ms"] for x in rows[warm:])
torch_ms = lambda d, r: json.load(open(f"{tmp}/torch_{d}_r{r}.json"))["median_step_ms"]
gemm = lambda who, d, r: json.load(open(f"{tmp}/{who}_gemm_{d}_r{r}.json"))["gflops"]
each = lambda f: " ".join(f"{x:.0f}" for x in f)
print("| figure | fsdp.c | PyTorch | fsdp.c speed / PyTorch's | fsdp.c per round | PyTorch per round |")
print("|---|---:|---:|---:|---|---|")
for d, mode in (("fp32", "eager fp32"), ("bf16", "torch.compile + autocast bf16")):
    o, t = [ours_ms(d, r) for r in rounds], [torch_ms(d, r) for r in rounds]
    ours_name = "fsdp train" + (" --param-dtype bf16" if d == "bf16" else "")
    print(f"| step ms: {ours_name} / PyTorch {mode} | {st.median(o):.1f} | {st.median(t):.1f} | "
          f"**{st.median(t) / st.median(o):.2f}** | {each(o)} | {each(t)} |")
for d in ("fp32", "bf16") if model != "llama3-debug" else ():
    o, t = [gemm("ours", d, r) for r in rounds], [gemm("torch", d, r) for r in rounds]
    print(f"| GEMM GFLOP/s, {d} | {st.median(o):.0f} | {st.median(t):.0f} | **{st.median(o) / st.median(t):.2f}** | "
          f"{each(o)} | {each(t)} |")
print("(speed ratio: PyTorch's step time over ours, our GFLOP/s over PyTorch's: above 1, fsdp.c is faster)")
load = lambda r: open(f"{tmp}/load_r{r}").read().strip()
print(f"load average before: {load(0)}; after each round: " + " ".join(load(r) for r in rounds))
PYEOF
