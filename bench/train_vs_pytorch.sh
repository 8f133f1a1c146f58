#!/usr/bin/env bash
# Throughput of `fsdp train` against PyTorch (bench/torch_train.py, the same
# GPT-2 as tools/gpt2_torch.py) on the shakespeare-char shape at W=1 with the
# same thread count, then tokens/s and peak tracked bytes per rank of
# `fsdp train --sharding full` at W = 1, 2, 4 with the same per-rank batch.
#
# Usage: bench/train_vs_pytorch.sh [--steps N] [--batch-size B] [--seq-len T]
#            [--threads N] [--worlds "1 2 4"] [--wait-policies "default PASSIVE"]
#            [--warmup K] [--data FILE] [--fsdp PATH] [--skip-torch] [--skip-scaling] [--keep-logs]
# Every figure is the median over the steps after the first K (default K=1: step 1 is warm-up).
# The comparison runs once per OMP_WAIT_POLICY in --wait-policies ("default"
# leaves the variable unset). A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=/usr/bin/python3            # Debian's python, the one with torch
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODEL=shakespeare-char         # 6 layers, 6 heads, 384 embd, vocab 256, T 256
N_LAYER=6 N_HEAD=6 N_EMBD=384 VOCAB=256
STEPS=8
WARMUP=1
BATCH=8
SEQ=256
THREADS="$(nproc)"
WORLDS="1 2 4"
WAIT_POLICIES="default PASSIVE"
SKIP_TORCH=0 SKIP_SCALING=0 KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --steps) STEPS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --batch-size) BATCH="$2"; shift 2 ;;
    --seq-len) SEQ="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --worlds) WORLDS="$2"; shift 2 ;;
    --wait-policies) WAIT_POLICIES="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --skip-torch) SKIP_TORCH=1; shift ;;
    --skip-scaling) SKIP_SCALING=1; shift ;;
    --keep-logs) KEEP=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done

[ -x "$FSDP" ] || { echo "no $FSDP: build first (cmake --build build)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
[ "$STEPS" -gt "$WARMUP" ] || { echo "--steps must be > --warmup ($WARMUP)" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-bench.XXXXXX")"
if [ "$KEEP" = 1 ]; then echo "logs kept in $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi

# Open MPI binds ranks to cores by default when np <= 2, which would pin a
# multi-threaded W=1 rank to one core; --bind-to none leaves placement to the OS.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
TIME=()
[ -x /usr/bin/time ] && TIME=(/usr/bin/time -f %M -o)   # peak RSS in KiB (the largest process)

# "median tokens/s, median step ms, max mem_peak_bytes" over steps WARMUP+1..N of a JSONL log
summarize() {
  "$PY" - "$1" "$WARMUP" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
timed = rows[int(sys.argv[2]):] or rows
print(statistics.median(r["tokens_per_s"] for r in timed),
      statistics.median(r["step_ms"] for r in timed),
      max(r["mem_peak_bytes"] for r in rows))
PYEOF
}

# run_ours W THREADS_PER_RANK LOG [fsdp train flags...]; peak RSS (KiB) goes to LOG.rss
run_ours() {
  local w="$1" th="$2" log="$3"; shift 3
  local timecmd=() xs=(-x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS)
  [ ${#TIME[@]} -gt 0 ] && timecmd=("${TIME[@]}" "$log.rss")
  [ -n "${OMP_WAIT_POLICY+x}" ] && xs+=(-x OMP_WAIT_POLICY)
  [ -n "${OPENBLAS_CORETYPE+x}" ] && xs+=(-x OPENBLAS_CORETYPE)
  OMP_NUM_THREADS="$th" OPENBLAS_NUM_THREADS="$th" \
    "${timecmd[@]}" "${MPIRUN[@]}" "${xs[@]}" -np "$w" \
    "$FSDP" train --model "$MODEL" --data "$DATA" --seq-len "$SEQ" --batch-size "$BATCH" \
    --steps "$STEPS" --log "$log" "$@" >"$log.out" 2>&1 ||
    { echo "fsdp train failed (W=$w):" >&2; tail -20 "$log.out" >&2; exit 1; }
}

mib() { "$PY" -c "import sys; print(f'{float(sys.argv[1]) / 2**20:.1f}')" "$1"; }

echo "== fsdp train vs PyTorch: $MODEL (L=$N_LAYER H=$N_HEAD C=$N_EMBD V=$VOCAB), B=$BATCH T=$SEQ, $STEPS steps, W=1"
echo "   machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
blas_of() { ldd "$1" 2>/dev/null | awk '/libopenblas|libblas/ {print $3; exit}' | xargs -r readlink -f; }
torch_lib=$("$PY" -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libtorch_cpu.so'))")
echo "   BLAS: ours $(blas_of "$FSDP"), PyTorch $(blas_of "$torch_lib");" \
     "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE-<unset>}"
echo "   threads: OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=$THREADS for both, torch.set_num_threads($THREADS) for PyTorch;"
echo "            one round per OMP_WAIT_POLICY in '$WAIT_POLICIES' (default = variable unset)"
echo "   figures: median over steps $((WARMUP + 1))..$STEPS"
echo
printf '| %-8s | %-18s | %8s | %8s | %12s | %16s |\n' OMP_WAIT "" tokens/s ms/step "peak RSS MiB" "tracked peak MiB"
printf '|%s|%s|%s|%s|%s|%s|\n' ---------- -------------------- ---------- ---------- -------------- ------------------

FIRST_TPS="" FIRST_MS="" FIRST_PEAK="" FIRST_POLICY=""
for policy in $WAIT_POLICIES; do
  if [ "$policy" = default ]; then unset OMP_WAIT_POLICY; else export OMP_WAIT_POLICY="$policy"; fi
  run_ours 1 "$THREADS" "$TMP/ours_w1_$policy.jsonl"
  read -r OURS_TPS OURS_MS OURS_PEAK < <(summarize "$TMP/ours_w1_$policy.jsonl")
  OURS_RSS=0
  [ -s "$TMP/ours_w1_$policy.jsonl.rss" ] && OURS_RSS=$(($(tail -1 "$TMP/ours_w1_$policy.jsonl.rss") * 1024))
  if [ -z "$FIRST_TPS" ]; then
    FIRST_TPS="$OURS_TPS" FIRST_MS="$OURS_MS" FIRST_PEAK="$OURS_PEAK" FIRST_POLICY="$policy"
  fi
  TORCH_TPS=0 TORCH_MS=0 TORCH_RSS=0
  if [ "$SKIP_TORCH" = 0 ]; then
    OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" \
      "$PY" "$ROOT/bench/torch_train.py" --n-layer "$N_LAYER" --n-head "$N_HEAD" --n-embd "$N_EMBD" \
      --vocab-size "$VOCAB" --seq-len "$SEQ" --batch-size "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --threads "$THREADS" \
      --data "$DATA" --json "$TMP/torch_$policy.json" >"$TMP/torch_$policy.out" 2>&1 ||
      { echo "torch_train.py failed:" >&2; tail -20 "$TMP/torch_$policy.out" >&2; exit 1; }
    read -r TORCH_TPS TORCH_MS TORCH_RSS < <("$PY" -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(s["median_tokens_per_s"], s["median_step_ms"], s["rss_peak_bytes"])' "$TMP/torch_$policy.json")
  fi
  "$PY" - "$policy" "$OURS_TPS" "$OURS_MS" "$OURS_PEAK" "$OURS_RSS" "$TORCH_TPS" "$TORCH_MS" "$TORCH_RSS" <<'PYEOF'
import sys
pol = sys.argv[1]
o_tps, o_ms, o_peak, o_rss, t_tps, t_ms, t_rss = map(float, sys.argv[2:])
M, na = 2**20, "n/a"
rss = f"{o_rss / M:12.1f}" if o_rss else f"{na:>12s}"
print(f"| {pol:8s} | {'fsdp train (ours)':18s} | {o_tps:8.0f} | {o_ms:8.1f} | {rss} | {o_peak / M:16.1f} |")
if t_tps:
    print(f"| {pol:8s} | {'PyTorch':18s} | {t_tps:8.0f} | {t_ms:8.1f} | {t_rss / M:12.1f} | {na:>16s} |")
    rr = f"{o_rss / t_rss:12.2f}" if o_rss else f"{na:>12s}"
    print(f"| {pol:8s} | {'ratio ours/PyTorch':18s} | {o_tps / t_tps:8.2f} | {o_ms / t_ms:8.2f} | {rr} | {'':16s} |")
PYEOF
done
unset OMP_WAIT_POLICY
echo "(peak RSS: whole process, /usr/bin/time for ours, VmHWM for PyTorch; tracked peak: fsdp's"
echo " mem_peak_bytes, its own allocations only; each ratio compares two runs of the same round)"

[ "$SKIP_SCALING" = 1 ] && exit 0

echo
echo "== fsdp train --sharding full, B=$BATCH per rank, T=$SEQ, $STEPS steps: W ranks on $(nproc) cores"
echo "   1 thread per rank when W > 1 (OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=1); W=1 is shown with 1 thread and"
echo "   with $THREADS threads (the first round above, OMP_WAIT_POLICY=$FIRST_POLICY). W > $(nproc) oversubscribes"
echo "   the cores (--oversubscribe): expect no gain in tokens/s there."
echo "   tokens/s counts all ranks (B*T*W per step); peak MiB/rank is mem_peak_bytes, the max over ranks of tracked bytes."
echo
printf '| %2s | %12s | %8s | %8s | %13s |\n' W threads/rank tokens/s ms/step "peak MiB/rank"
printf '|%s|%s|%s|%s|%s|\n' ---- -------------- ---------- ---------- ---------------
for w in $WORLDS; do
  if [ "$w" = 1 ] && [ "$THREADS" != 1 ] && [ -n "$FIRST_TPS" ]; then
    printf '| %2s | %12s | %8.0f | %8.1f | %13s |\n' 1 "$THREADS" "$FIRST_TPS" "$FIRST_MS" "$(mib "$FIRST_PEAK")"
  fi
  run_ours "$w" 1 "$TMP/ours_full_w$w.jsonl" --sharding full
  read -r TPS MS PEAK < <(summarize "$TMP/ours_full_w$w.jsonl")
  printf '| %2s | %12s | %8.0f | %8.1f | %13s |\n' "$w" 1 "$TPS" "$MS" "$(mib "$PEAK")"
done
