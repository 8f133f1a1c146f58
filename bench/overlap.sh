#!/usr/bin/env bash
# Overlap of communication with compute: step time and the exposed share of it
# (the compute thread blocked on a comm event) for `fsdp train` at W = 2 and 4,
# with overlap off (every collective waited for at once), prefetch off
# (reduce-scatters still asynchronous), and prefetch on (the defaults), and DDP
# (--sharding none) with the defaults for the full-vs-DDP ratio.
#
# Usage: bench/overlap.sh [--models "shakespeare-char gpt2"] [--worlds "2 4"] [--steps N]
#            [--repeats R] [--fsdp PATH] [--data FILE] [--trace-dir DIR]
# Each run's figure is its median over steps 2..N (step 1 pays for first touches);
# the modes run in turn, R rounds of them (default 2), and each mode keeps its
# fastest round, so that a burst of load from the shared host does not land on one
# mode only. With --trace-dir, prefetch-on runs write Chrome traces there.
# A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODELS="shakespeare-char gpt2"
WORLDS="2 4"
STEPS=5
REPEATS=2
TRACE_DIR=""

while [ $# -gt 0 ]; do
  case "$1" in
    --models) MODELS="$2"; shift 2 ;;
    --worlds) WORLDS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --trace-dir) TRACE_DIR="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
[ "$STEPS" -ge 2 ] || { echo "--steps must be at least 2" >&2; exit 2; }

TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-overlap.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
# Unbound, so that each rank's comm threads may run on another core than its compute.
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
export OMP_NUM_THREADS=1

# Per model: the batch per rank. GPT-2 124M gets a small one so that a step takes seconds.
shape() {
  case "$1" in
    gpt2) echo "--batch-size 1 --seq-len 256" ;;
    *) echo "--batch-size 8 --seq-len 256" ;;
  esac
}

run() {  # run MODEL W NAME ARGS...
  local model=$1 w=$2 name=$3
  shift 3
  # shellcheck disable=SC2046
  "${MPIRUN[@]}" -np "$w" "$FSDP" train --model "$model" --data "$DATA" --steps "$STEPS" $(shape "$model") \
    --log "$TMP/$model-w$w-$name.jsonl" "$@" > "$TMP/$model-w$w-$name.out" 2>&1 ||
    { cat "$TMP/$model-w$w-$name.out" >&2; exit 1; }
}

for model in $MODELS; do
  for w in $WORLDS; do
    for round in $(seq "$REPEATS"); do
      echo "running $model at W=$w, round $round ..." >&2
      run "$model" "$w" "overlap-off.$round" --overlap off
      run "$model" "$w" "prefetch-off.$round" --prefetch 0 --backward-prefetch none
      trace=()
      [ -n "$TRACE_DIR" ] && trace=(--trace "$TRACE_DIR/overlap-$model-w$w.json" --trace-steps "2:$STEPS")
      run "$model" "$w" "prefetch-on.$round" "${trace[@]}"
      run "$model" "$w" "ddp.$round" --sharding none
    done
  done
done

/usr/bin/python3 - "$TMP" "$MODELS" "$WORLDS" "$REPEATS" <<'PY'
import json, os, statistics, sys
tmp, models, worlds, repeats = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
def run_medians(model, w, name, r):
    rows = [json.loads(l) for l in open(os.path.join(tmp, f"{model}-w{w}-{name}.{r}.jsonl"))][1:]
    return {k: statistics.median(row[k] for row in rows) for k in ("step_ms", "comm_ms", "exposed_comm_ms")}
def median(model, w, name, key):
    fastest = min((run_medians(model, w, name, r) for r in range(1, repeats + 1)), key=lambda m: m["step_ms"])
    return fastest[key]
print("| model | W | mode | step ms | comm ms | exposed ms | exposed share |")
print("|---|---:|---|---:|---:|---:|---:|")
for model in models:
    for w in worlds:
        for name in ("overlap-off", "prefetch-off", "prefetch-on", "ddp"):
            step, comm, exposed = (median(model, w, name, k) for k in ("step_ms", "comm_ms", "exposed_comm_ms"))
            mode = {"ddp": "none (DDP), prefetch on"}.get(name, "full, " + name.replace("-", " "))
            print(f"| {model} | {w} | {mode} | {step:.0f} | {comm:.0f} | {exposed:.1f} | {100 * exposed / step:.1f}% |")
print()
print("| model | W | full / DDP step time | prefetch on / overlap off |")
print("|---|---:|---:|---:|")
for model in models:
    for w in worlds:
        full, ddp, off = (median(model, w, n, "step_ms") for n in ("prefetch-on", "ddp", "overlap-off"))
        print(f"| {model} | {w} | {full / ddp:.2f}x | {full / off:.2f}x |")
PY
