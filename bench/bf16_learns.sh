#!/usr/bin/env bash
# bf16 learns as fp32 does (issue 21): shakespeare-char (L6 H6 C384 V256), T=128, global
# batch 16, 250 steps on 2 ranks, once with fp32 parameters and once with --param-dtype
# bf16 (bf16 compute, fp32 master weights and AdamW), the same seed and batches. Prints
# each run's mean loss over its last 30 steps and their relative difference, which the
# issue bounds by 2%; exits 1 above it. Minutes on 2 cores: a check run by hand, not in CI.
#   bench/bf16_learns.sh [--build DIR] [--data FILE] [--steps S]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
STEPS=250 LAST=30 TOLERANCE=0.02

while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$BUILD/fsdp" ] || { echo "no $BUILD/fsdp: build first (scripts/build.sh $BUILD)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA (--data FILE)" >&2; exit 1; }
[ "$STEPS" -gt "$LAST" ] || { echo "--steps must be > $LAST" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-bf16-learns.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
export OMP_NUM_THREADS=1
for dtype in fp32 bf16; do
  mpirun --allow-run-as-root --oversubscribe -np 2 "$BUILD/fsdp" train --model shakespeare-char --data "$DATA" \
    --seq-len 128 --global-batch-size 16 --steps "$STEPS" --param-dtype "$dtype" --log "$TMP/$dtype.jsonl" \
    >"$TMP/$dtype.out" 2>&1 || { echo "fsdp train ($dtype) failed:" >&2; tail -20 "$TMP/$dtype.out" >&2; exit 1; }
done

python3 - "$TMP" "$LAST" "$TOLERANCE" <<'PY'
import json, statistics as st, sys
tmp, last, tolerance = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
mean = {}
for d in ("fp32", "bf16"):
    rows = [json.loads(l) for l in open(f"{tmp}/{d}.jsonl") if l.strip()]
    mean[d] = st.mean(r["loss"] for r in rows[-last:])
    print(f"{d}: first loss {rows[0]['loss']:.4f}, mean of the last {last} steps {mean[d]:.4f}, "
          f"median step {st.median(r['step_ms'] for r in rows[5:]):.0f} ms")
rel = abs(mean["bf16"] - mean["fp32"]) / mean["fp32"]
print(f"bf16 against fp32: {100 * rel:.2f}% apart (bound {100 * tolerance:.0f}%)")
sys.exit(0 if rel <= tolerance else 1)
PY
