#!/usr/bin/env bash
# fsdp.c against PyTorch in one process on the CPU (W=1), the same model, B, T, data and
# N threads for both:
#   step time: `fsdp train` in fp32, bf16 and fp16 against PyTorch eager fp32,
#     torch.compile fp32 and torch.compile + autocast bf16 (bench/torch_train.py, on
#     tools/gpt2_torch.py or tools/llama_torch.py): our fp32 against PyTorch's fastest of
#     the three on this CPU, our bf16 against its bf16, and our 16-bit steps against our
#     fp32 one (on a CPU without 16-bit products, the cost of widening);
#   GEMM GFLOP/s (GPT-2 models only): a step's linear-layer products (forward, dinp,
#     dweight, with the bias) by fsdp.c's nn_matmul (bench/cpu_matmul.c) and by PyTorch
#     (bench/torch_matmul.py), in fp32 and bf16;
#   where our step's time goes (one more run of each dtype, its last steps traced): each
#     op's milliseconds and share of the step, GFLOP/s of the products and the attention,
#     and what each ran on (bench/step_ops.py).
# It prints the instruction sets each side ran on. --cap avx2 runs both as an AVX2 machine
# would (ours: FSDP_SIMD=avx2 DNNL_MAX_CPU_ISA=AVX2; PyTorch: ATEN_CPU_CAPABILITY=avx2
# ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2: its fp32 products are MKL's, which
# the other two leave on AVX-512), to stand in for one on a CPU with AVX-512.
# Models (--model, `fsdp train`'s presets): shakespeare-char (6 layers, 6 heads, 384 wide,
# vocabulary 256; B=8 T=256 by default), gpt2 (GPT-2 124M: 12, 12, 768, 50257; B=4) and
# llama3-debug (6 layers, 16 heads, 256 wide, SwiGLU 768, vocabulary 2048; B=8). Every model
# reads the text's bytes as tokens: ids below 256, valid input for the larger vocabularies
# (not what those models were made for, but a step costs the same: a speed benchmark).
# Each figure is a run's median (over the steps after the first K, or over a product's
# repeats), then the median over R rounds that run every program in turn.
#
# Usage: bench/cpu_vs_pytorch.sh [--model NAME] [--batch B] [--seq-len T] [--threads N]
#            [--rounds R] [--steps S] [--warmup K] [--torch-bf16-steps S2] [--cap avx2]
#            [--data FILE] [--build DIR] [--keep-logs]
# Defaults: shakespeare-char, T = 256, N = nproc, R = 3, S = 12, K = 4 (torch.compile
# compiles in its first steps), S2 = S (PyTorch's bf16 has no fast path without AVX-512
# BF16 and AMX, tens of seconds a step: give it fewer steps there, timed after the first),
# build/ for fsdp and bench/cpu_matmul. PyTorch is PyPI's, from scripts/torch-venv.sh. A
# benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
THREADS="$(nproc)" ROUNDS=3 STEPS=12 WARMUP=4 KEEP=0 BF16_STEPS="" CAP=""
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
    --torch-bf16-steps) BF16_STEPS="$2"; shift 2 ;;
    --cap) CAP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
BF16_STEPS="${BF16_STEPS:-$STEPS}" BF16_WARMUP=$WARMUP
[ "$BF16_STEPS" -gt "$WARMUP" ] || BF16_WARMUP=1
[ "$BF16_STEPS" -gt "$BF16_WARMUP" ] || { echo "--torch-bf16-steps must be 2 or more" >&2; exit 2; }
OURS_ENV=() TORCH_ENV=()
case "$CAP" in
  "") ;;
  avx2) OURS_ENV=(FSDP_SIMD=avx2 DNNL_MAX_CPU_ISA=AVX2) TORCH_ENV=(ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2) ;;
  *) echo "--cap: '$CAP' is not avx2" >&2; exit 2 ;;
esac
TORCH_PY="$("$ROOT/scripts/torch-venv.sh")"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-cpu-bench.XXXXXX")"
if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi
export OMP_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"

# The cores are shared with other jobs: the load average before the first round and after each.
cut -d' ' -f1 /proc/loadavg >"$TMP/load_r0"
for r in $(seq "$ROUNDS"); do
  echo "round $r/$ROUNDS ..." >&2
  for dtype in fp32 bf16 fp16; do
    env "${OURS_ENV[@]}" "$FSDP" train --model "$MODEL" --data "$DATA" --batch-size "$BATCH" --seq-len "$SEQ" \
      --steps "$STEPS" --param-dtype "$dtype" --log "$TMP/ours_${dtype}_r$r.jsonl" >"$TMP/ours_${dtype}_r$r.out" 2>&1 ||
      { echo "fsdp train ($dtype) failed:" >&2; tail -20 "$TMP/ours_${dtype}_r$r.out" >&2; exit 1; }
  done
  # PyTorch's configurations: eager fp32, torch.compile fp32, torch.compile + autocast bf16.
  # One that crashes is reported as such and left out of the ratios (torch.compile with
  # autocast bf16 segfaults in its compiled forward under ATEN_CPU_CAPABILITY=avx2 on an
  # AVX-512 host: PyTorch 2.15, 2026-12-07); eager fp32, the baseline of last resort, may not.
  for config in eager compile bf16; do
    flags=(--steps "$STEPS" --warmup "$WARMUP")
    case $config in
      compile) flags+=(--compile) ;;
      bf16) flags=(--steps "$BF16_STEPS" --warmup "$BF16_WARMUP" --compile --autocast-bf16) ;;
    esac
    env "${TORCH_ENV[@]}" "$TORCH_PY" "$ROOT/bench/torch_train.py" --model "$MODEL" --seq-len "$SEQ" \
      --batch-size "$BATCH" --threads "$THREADS" --data "$DATA" --quiet --json "$TMP/torch_${config}_r$r.json" \
      "${flags[@]}" >"$TMP/torch_${config}_r$r.out" 2>&1 || {
      rc=$?
      echo "torch_train.py ($config) failed (exit $rc):" >&2
      tail -5 "$TMP/torch_${config}_r$r.out" >&2
      [ "$config" != eager ] || exit 1
      echo "{\"failed\": $rc}" >"$TMP/torch_${config}_r$r.json"
    }
  done
  if [ "$MODEL" != llama3-debug ]; then
    for dtype in fp32 bf16; do
      env "${OURS_ENV[@]}" "$MATMUL" "${GEMM_SHAPE[@]}" --dtype "$dtype" | tail -n 1 >"$TMP/ours_gemm_${dtype}_r$r.json"
      env "${TORCH_ENV[@]}" "$TORCH_PY" "$ROOT/bench/torch_matmul.py" "${GEMM_SHAPE[@]}" --dtype "$dtype" \
        --threads "$THREADS" | tail -n 1 >"$TMP/torch_gemm_${dtype}_r$r.json"
    done
  fi
  cut -d' ' -f1 /proc/loadavg >"$TMP/load_r$r"
done

# Where our step's time goes: one more run of each dtype, its last steps traced (the trace
# costs a little, so these runs are not among the timed rounds).
for dtype in fp32 bf16 fp16; do
  env "${OURS_ENV[@]}" "$FSDP" train --model "$MODEL" --data "$DATA" --batch-size "$BATCH" --seq-len "$SEQ" \
    --steps "$STEPS" --param-dtype "$dtype" --trace "$TMP/ours_${dtype}.trace.json" \
    --trace-steps "$((WARMUP + 1)):$STEPS" >"$TMP/ours_${dtype}_traced.out" 2>&1 ||
    { echo "fsdp train --trace ($dtype) failed:" >&2; tail -20 "$TMP/ours_${dtype}_traced.out" >&2; exit 1; }
done

echo "== fsdp.c against PyTorch $("$TORCH_PY" -c 'import torch; print(torch.__version__)'), one process, $THREADS threads:"
echo "   $MODEL, B=$BATCH T=$SEQ; machine: $(nproc) cores,"
echo "   $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -I)${CAP:+; capped to $CAP}"
echo "   step: median of steps $((WARMUP + 1))..$STEPS (PyTorch bf16: $((BF16_WARMUP + 1))..$BF16_STEPS); GEMM: a step's"
echo "   linear-layer products; then the median of $ROUNDS rounds"
echo
/usr/bin/python3 - "$TMP" "$WARMUP" "$ROUNDS" "$MODEL" <<'PYEOF'
import json, re, statistics as st, sys
tmp, warm, rounds, model = sys.argv[1], int(sys.argv[2]), range(1, int(sys.argv[3]) + 1), sys.argv[4]
def ours_ms(d, r):
    rows = [json.loads(l) for l in open(f"{tmp}/ours_{d}_r{r}.jsonl") if l.strip()]
    return st.median(x["step_ms"] for x in rows[warm:])
torch_json = lambda c, r: json.load(open(f"{tmp}/torch_{c}_r{r}.json"))
gemm = lambda who, d, r: json.load(open(f"{tmp}/{who}_gemm_{d}_r{r}.json"))["gflops"]
each = lambda f: " ".join(f"{x:.0f}" for x in f)
ours_isa = re.search(r"^cpu: ([^,]*)", open(f"{tmp}/ours_fp32_r1.out").read(), re.M)
torch_rt = torch_json("eager", 1)["runtime"]
print(f"instruction sets: fsdp.c {ours_isa.group(1) if ours_isa else '?'}; PyTorch ATen "
      f"{torch_rt.get('cpu_capability', '?')} (ONEDNN_MAX_CPU_ISA={torch_rt['env'].get('ONEDNN_MAX_CPU_ISA') or 'unset'}, "
      f"MKL_ENABLE_INSTRUCTIONS={torch_rt['env'].get('MKL_ENABLE_INSTRUCTIONS') or 'unset'})")
print()
ours = {d: [ours_ms(d, r) for r in rounds] for d in ("fp32", "bf16", "fp16")}
names = {"eager": "eager fp32", "compile": "torch.compile fp32", "bf16": "torch.compile + autocast bf16"}
runs = {c: [torch_json(c, r) for r in rounds] for c in names}
failed = {c: [str(j["failed"]) for j in runs[c] if "failed" in j] for c in names}
torch = {c: [j["median_step_ms"] for j in runs[c]] for c in names if not failed[c]}
print("| step ms | median | per round |")
print("|---|---:|---|")
for d in ours:
    print(f"| fsdp train --param-dtype {d} | {st.median(ours[d]):.1f} | {each(ours[d])} |")
for c in names:
    if failed[c]:
        print(f"| PyTorch {names[c]} | failed | exit {' '.join(failed[c])} |")
    else:
        print(f"| PyTorch {names[c]} | {st.median(torch[c]):.1f} | {each(torch[c])} |")
print()
best = min(torch, key=lambda c: st.median(torch[c]))
print("| ratio | value | per round |")
print("|---|---:|---|")
ratio = lambda a, b: [x / y for x, y in zip(a, b)]
each2 = lambda f: " ".join(f"{x:.2f}" for x in f)
rows = [(f"PyTorch's fastest ({names[best]}) over fsdp.c fp32", torch[best], ours["fp32"])]
if "bf16" in torch:
    rows.append(("PyTorch torch.compile + autocast bf16 over fsdp.c bf16", torch["bf16"], ours["bf16"]))
rows += [("fsdp.c bf16 over fsdp.c fp32", ours["bf16"], ours["fp32"]),
        ("fsdp.c fp16 over fsdp.c fp32", ours["fp16"], ours["fp32"])]
for name, a, b in rows:
    print(f"| {name} | **{st.median(a) / st.median(b):.2f}** | {each2(ratio(a, b))} |")
for d in ("fp32", "bf16") if model != "llama3-debug" else ():
    o, t = [gemm("ours", d, r) for r in rounds], [gemm("torch", d, r) for r in rounds]
    print(f"| GEMM GFLOP/s {d}: fsdp.c {st.median(o):.0f} over PyTorch {st.median(t):.0f} | "
          f"**{st.median(o) / st.median(t):.2f}** | {each2(ratio(o, t))} |")
print("(a speed ratio above 1: fsdp.c is faster; a 16-bit step over fp32 above 1: it is slower)")
load = lambda r: open(f"{tmp}/load_r{r}").read().strip()
print(f"load average before: {load(0)}; after each round: " + " ".join(load(r) for r in rounds))
PYEOF
for dtype in fp32 bf16 fp16; do
  echo
  echo "fsdp.c's $dtype step, op by op (steps $((WARMUP + 1))..$STEPS of a traced run):"
  /usr/bin/python3 "$ROOT/bench/step_ops.py" "$TMP/ours_${dtype}.trace.json" "$TMP/ours_${dtype}_traced.out" "$BATCH" "$SEQ"
done
