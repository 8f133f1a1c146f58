#!/usr/bin/env bash
# The planner's step time against measured steps on this machine's CPU: `fsdp train`
# at W = 1, 2, 4 (mpirun, --bind-to none, oversubscribed past the cores) for each model,
# then `fsdp plan` at each W calibrated on one W's log (--calibrate-on, default 2), and
# the predicted step and exposed communication beside the measured ones, as a ratio.
# Every rank and the planner run OMP_NUM_THREADS=1 (--threads), so that the plan's
# machine is the run's: on 2 cores W=1 leaves one idle, W=4 puts two ranks on each.
# Oversubscribed ranks still exercise the comm model (the rings, their overlap with the
# compute) but share cores with their comm threads, which the calibration absorbs.
#
# Usage: bench/plan_time.sh [--models "gpt2-tiny shakespeare-char llama3-debug"]
#            [--worlds "1 2 4"] [--calibrate-on W] [--steps N] [--threads T]
#            [--fsdp PATH] [--data FILE] [--keep DIR]
# Each measured figure is a run's median over its steps after the first two. A
# benchmark, not a test: it checks nothing, and prints whether each prediction is within
# 20% (step) of what was measured.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODELS="gpt2-tiny shakespeare-char llama3-debug"
WORLDS="1 2 4"
CAL=2
STEPS=8
THREADS=1
KEEP=""

while [ $# -gt 0 ]; do
  case "$1" in
    --models) MODELS="$2"; shift 2 ;;
    --worlds) WORLDS="$2"; shift 2 ;;
    --calibrate-on) CAL="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
if [ -n "$KEEP" ]; then
  mkdir -p "$KEEP" && tmp="$KEEP"
else
  tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fi
mpi=(mpirun --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

shape() {  # shape MODEL: the batch and sequence of each model's runs
  case $1 in
    gpt2-tiny) echo "--batch-size 8 --seq-len 128" ;;
    *) echo "--batch-size 8 --seq-len 256" ;;
  esac
}

median() {  # median LOG KEY: over the steps after the first two
  python3 - "$1" "$2" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
print(statistics.median(r[sys.argv[2]] for r in rows if r["step"] > 2))
EOF
}

echo "== fsdp plan against fsdp train: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $THREADS thread(s) a rank, $(date -u +%F)"
echo "   calibrated on W=$CAL; measured: the median step after the first two of $STEPS"
echo
echo "| model | W | measured step ms | planned | ratio | measured exposed ms | planned | within 20% |"
echo "|---|---:|---:|---:|---:|---:|---:|---|"
for model in $MODELS; do
  for W in $WORLDS; do
    # shellcheck disable=SC2046
    OMP_NUM_THREADS=$THREADS "${mpi[@]}" -x OMP_NUM_THREADS -np "$W" "$FSDP" train --model "$model" $(shape "$model") \
      --data "$DATA" --steps "$STEPS" --log "$tmp/$model-w$W.jsonl" > "$tmp/$model-w$W.out" 2>&1
  done
  for W in $WORLDS; do
    # shellcheck disable=SC2046
    OMP_NUM_THREADS=$THREADS "$FSDP" plan --model "$model" $(shape "$model") --world-size "$W" \
      --calibrate "$tmp/$model-w$CAL.jsonl" --format json > "$tmp/$model-plan-w$W.json" 2> "$tmp/$model-plan-w$W.err"
    python3 - "$model" "$W" "$(median "$tmp/$model-w$W.jsonl" step_ms)" "$(median "$tmp/$model-w$W.jsonl" exposed_comm_ms)" \
      "$tmp/$model-plan-w$W.json" "$CAL" <<'EOF'
import json, sys
model, W, step, exposed, plan, cal = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], int(sys.argv[6])
t = json.load(open(plan))["time"]
ratio = t["step_ms"] / step
note = "(calibrated here)" if W == cal else ("yes" if abs(ratio - 1) <= 0.2 else "no")
print(f"| {model} | {W} | {step:.1f} | {t['step_ms']:.1f} | {ratio:.2f} | {exposed:.1f} | {t['exposed_comm_ms']:.1f} | {note} |")
EOF
  done
done
