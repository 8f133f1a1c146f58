#!/usr/bin/env bash
# Makes docs/pictures.md's pictures from real runs of this build: fsdp train against
# PyTorch FSDP2 (loss and grad norm), memory snapshots with `fsdp plan` beside them,
# traces drawn by `fsdp traceviz`, `fsdp plan` from 1 to 64 ranks, HSDP on the
# network-namespace testbed, where a step's CPU time goes, and the learning rate of a
# finished run extended twice. The SVGs go to OUT;
# tools/pictures.py draws all but the timelines (matplotlib, in the environment
# scripts/pictures-venv.sh makes once).
#
# Usage: scripts/pictures.sh [--short] [--build DIR] [--out DIR] [--data FILE] [--keep DIR]
#   --short   small models and few steps (the ctest test, ~1-2 min on 2 cores); the
#             FSDP2 runs only where scripts/torch-venv.sh's environment is already made,
#             the testbed only as root with network namespaces
#   default   the committed pictures: OUT = docs/pictures (makes the torch environment)
#   --keep    the runs' logs, traces, snapshots and plans go to DIR (default: a temporary
#             folder, removed at the end)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build" OUT="$ROOT/docs/pictures" SHORT=0 D=""
# The shared data beside the clone, or beside the worktrees' folder.
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
[ -r "$DATA" ] || DATA="$ROOT/../../shared/data/tinyshakespeare.txt"
# A clone alone: the tests' 256 KiB of it.
[ -r "$DATA" ] || DATA="$ROOT/tests/data/shakespeare.txt"
while [ $# -gt 0 ]; do
  case "$1" in
    --short) SHORT=1; shift ;;
    --build) BUILD="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --keep) D="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "pictures.sh: unknown flag '$1' (see --help)" >&2; exit 2 ;;
  esac
done
FSDP="$BUILD/fsdp" DUMP="$BUILD/tests/parity_dump"
for exe in "$FSDP" "$DUMP"; do
  [ -x "$exe" ] || { echo "pictures.sh: no $exe: build first (scripts/build.sh $BUILD)" >&2; exit 1; }
done
[ -r "$DATA" ] || { echo "pictures.sh: no data file $DATA (--data FILE)" >&2; exit 1; }
DRAW_PY="$("$ROOT/scripts/pictures-venv.sh")" || exit $?
if [ -n "$D" ]; then
  mkdir -p "$D"
else
  D="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-pictures.XXXXXX")"
  trap 'rm -rf "$D"' EXIT
fi
mkdir -p "$OUT"
D="$(cd "$D" && pwd)" OUT="$(cd "$OUT" && pwd)" FSDP="$(cd "$(dirname "$FSDP")" && pwd)/fsdp"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
log() { echo "pictures: $*" >&2; }
quiet() {  # quiet NAME CMD...: runs CMD, its output to D/NAME.out, shown only when it fails
  local name=$1; shift
  "$@" >"$D/$name.out" 2>&1 || { tail -n 20 "$D/$name.out" >&2; echo "pictures.sh: $name failed" >&2; exit 1; }
}

if [ "$SHORT" = 1 ]; then
  TINY=(--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 --batch-size 4)
  PARITY=(--model llama3-debug --n-layer 2 --global-batch-size 4 --seq-len 32 --steps 4)
  STEPS=3 WORLDS="2" EXTEND_STEPS="6 9 12" EXTEND_WARMUP=2 EXTEND_FROM=4
else
  TINY=(--model shakespeare-char --seq-len 128 --batch-size 4)
  PARITY=(--model llama3-debug --global-batch-size 8 --seq-len 64 --steps 30)
  STEPS=4 WORLDS="2 4" EXTEND_STEPS="60 90 120" EXTEND_WARMUP=10 EXTEND_FROM=40
fi

# 1. fsdp train against PyTorch FSDP2 from the same initial weights, on the same batches.
TORCH_PY=""
if [ "$SHORT" = 1 ]; then
  venv="${FSDP_VENV:-/var/cache/fsdp.c/venv-torch}"
  if "$venv/bin/python" -c 'from torch.distributed.fsdp import fully_shard' 2>/dev/null; then
    TORCH_PY="$venv/bin/python"
  else
    log "1: skipped, no PyTorch with fully_shard in $venv (scripts/torch-venv.sh makes it)"
  fi
else
  TORCH_PY="$("$ROOT/scripts/torch-venv.sh")"
fi
rm -f "$D"/parity_*
if [ -n "$TORCH_PY" ]; then
  FLAGS=("${PARITY[@]}" --data "$DATA" --lr 1e-3 --warmup 5 --seed 1234)
  quiet parity_dump "$DUMP" "$D/parity_start.bin" train "${FLAGS[@]}"
  for w in $WORLDS; do
    log "1: W=$w, fsdp train and PyTorch FSDP2"
    quiet "parity_ours_w$w" "${MPIRUN[@]}" -np "$w" "$FSDP" train "${FLAGS[@]}" --log "$D/parity_ours_w$w.jsonl"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    quiet "parity_torch_w$w" "${MPIRUN[@]}" -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT="$port" -np "$w" \
      "$TORCH_PY" "$ROOT/bench/fsdp2_llama.py" "$D/parity_start.bin" "$D/parity_torch_w$w.json" sdpa
  done
  rm -f "$D/parity_start.bin"
fi

# 2 and 3. A step's memory by category, and its timeline, under each strategy; the plan of each.
run_config() {  # run_config NAME FLAGS...
  local name=$1; shift
  log "2, 3: $name"
  quiet "step_$name" "${MPIRUN[@]}" -np 2 "$FSDP" train "${TINY[@]}" --data "$DATA" --steps "$STEPS" "$@" \
    --memory-snapshot "$D/snapshot_$name.json" --trace "$D/trace_$name.json" --trace-steps "2:$STEPS" \
    --log "$D/log_$name.jsonl"
  # The plan counts each OpenMP thread's workspace: as many as the ranks ran with.
  OMP_NUM_THREADS=1 "$FSDP" plan --world-size 2 "${TINY[@]}" "$@" --format json >"$D/plan_$name.json"
}
run_config full --sharding full
run_config grad-op --sharding grad-op
run_config none --sharding none
run_config full-ac --sharding full --ac full
run_config full-no-prefetch --sharding full --prefetch 0 --backward-prefetch none
# From the runs' folder: the image names the trace by its file name alone.
for name in full full-no-prefetch grad-op; do
  (cd "$D" && quiet "traceviz_$name" "$FSDP" traceviz "trace_$name.json" -o "$OUT/timeline-$name.svg")
done

# 4. The plan from 1 to 64 ranks.
log "4: fsdp plan, W = 1 ... 64"
for model in gpt2 llama3-8b; do
  for sharding in full grad-op none; do
    for w in 1 2 4 8 16 32 64; do
      "$FSDP" plan --model "$model" --world-size "$w" --sharding "$sharding" --param-dtype bf16 --batch-size 1 \
        --seq-len 1024 --format json >"$D/scaling_${model}_${sharding}_w$w.json"
    done
  done
done

# 5. HSDP against flat full sharding on the testbed: 2 nodes x 2 ranks.
rm -f "$D"/hsdp_*
if TESTBED_DIR="$ROOT/tests/testbed" sh -c '. "$TESTBED_DIR/testbed.sh"; testbed_check' >"$D/testbed_check.out" 2>&1
then
  log "5: the testbed, full and HSDP"
  quiet hsdp bash "$ROOT/scripts/pictures_testbed.sh" "$FSDP" "$DATA" "$D" "$STEPS" "${TINY[@]}"
else
  log "5: skipped: $(tail -n 1 "$D/testbed_check.out")"
fi

# 7. A finished run given more steps, twice (--resume auto); the same run resumed before
# its end (from step EXTEND_FROM) with the last --steps; and the run of the last --steps
# from the start: the learning rate of each.
log "7: a run given more steps"
rm -rf "$D"/extend_checkpoints* "$D"/extend_*.jsonl
EXTEND=("${TINY[@]}" --data "$DATA" --lr 1e-3 --warmup "$EXTEND_WARMUP")
for steps in $EXTEND_STEPS; do
  quiet "extend_$steps" "$FSDP" train "${EXTEND[@]}" --steps "$steps" --checkpoint-dir "$D/extend_checkpoints" \
    --checkpoint-every "$EXTEND_FROM" --resume auto --log "$D/extend_$steps.jsonl"
done
quiet extend_early "$FSDP" train "${EXTEND[@]}" --steps "$steps" --checkpoint-dir "$D/extend_checkpoints_early" \
  --resume "$(printf '%s/extend_checkpoints/step-%08d' "$D" "$EXTEND_FROM")" --log "$D/extend_early.jsonl"
quiet extend_whole "$FSDP" train "${EXTEND[@]}" --steps "$steps" --log "$D/extend_whole.jsonl"

log "drawing"
"$DRAW_PY" "$ROOT/tools/pictures.py" "$D" "$OUT"
log "done: $OUT"
