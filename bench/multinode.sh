#!/usr/bin/env bash
# Multi-node training on the testbed (tests/testbed/testbed.sh: network namespaces as
# nodes, their uplinks shaped with tc): 2 nodes x 2 ranks, full sharding over 4, HSDP
# (--mesh 2,2: sharded within a node, replicated across the two) and DDP, for each
# model at each link speed, side by side. Per run: the median step time and exposed
# communication (rank 0's, steps 2..N), and the bytes each node's uplink carried per
# step (its veth's counters over the run, divided by the steps), next to what
# `fsdp plan --mesh --ranks-per-node 2` predicts a node sends between machines.
#
# Usage (as root): bench/multinode.sh [--models "gpt2 llama3-debug"] [--rates "1gbit 10gbit"]
#            [--latency 1ms] [--steps N] [--fsdp PATH] [--data FILE]
# A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODELS="gpt2 llama3-debug"
RATES="1gbit 10gbit"
LATENCY=1ms
STEPS=4

while [ $# -gt 0 ]; do
  case "$1" in
    --models) MODELS="$2"; shift 2 ;;
    --rates) RATES="$2"; shift 2 ;;
    --latency) LATENCY="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
[ "$STEPS" -ge 2 ] || { echo "--steps must be at least 2" >&2; exit 2; }
# A latency where the kernel has no netem (tests/testbed/testbed.sh).
TESTBED_DELAY_LINK="$(dirname "$FSDP")/tests/delay_link"
[ -x "$TESTBED_DELAY_LINK" ] || TESTBED_DELAY_LINK=""

TESTBED_DIR="$ROOT/tests/testbed"
# shellcheck source=../tests/testbed/testbed.sh
. "$TESTBED_DIR/testbed.sh"
testbed_check
TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-multinode.XXXXXX")"
testbed_up 2
trap 'testbed_down; rm -rf "$TMP"' EXIT
testbed_hostfile 2 >"$TMP/hosts"

# Per model: the batch per rank, small enough that a GPT-2 124M step takes seconds.
shape() {
  case "$1" in
    gpt2) echo "--batch-size 1 --seq-len 64" ;;
    *) echo "--batch-size 4 --seq-len 128" ;;
  esac
}
strategy_flags() {
  case "$1" in
    full) echo "--sharding full" ;;
    hsdp) echo "--sharding full --mesh 2,2" ;;
    ddp) echo "--sharding none" ;;
  esac
}

# Bytes node NODE's uplink has sent so far: what its switch port received.
sent_bytes() { in_ns sw cat "/sys/class/net/port$1/statistics/rx_bytes"; }

run() {  # run MODEL RATE STRATEGY
  local model=$1 rate=$2 strategy=$3 name="$1-$2-$3"
  local before0 before1
  before0=$(sent_bytes 0) before1=$(sent_bytes 1)
  # shellcheck disable=SC2046
  testbed_mpirun --hostfile "$TMP/hosts" -np 4 --bind-to none "$FSDP" train --model "$model" --data "$DATA" \
    --steps "$STEPS" $(shape "$model") $(strategy_flags "$strategy") --log "$TMP/$name.jsonl" >"$TMP/$name.out" 2>&1 ||
    { cat "$TMP/$name.out"; echo "the $name run failed" >&2; exit 1; }
  echo "$(( $(sent_bytes 0) - before0 )) $(( $(sent_bytes 1) - before1 ))" >"$TMP/$name.bytes"
  # shellcheck disable=SC2046
  "$FSDP" plan --model "$model" --world-size 4 --ranks-per-node 2 $(shape "$model") $(strategy_flags "$strategy") \
    --format json >"$TMP/$name.plan"
}

echo "testbed: 2 nodes x 2 ranks, $(nproc) cores, $STEPS steps per run; models: $MODELS; uplinks: $RATES"
for rate in $RATES; do
  testbed_shape "$rate" "$LATENCY"
  for model in $MODELS; do
    for strategy in full hsdp ddp; do run "$model" "$rate" "$strategy"; done
  done
done

python3 - "$TMP" "$STEPS" "$MODELS" "$RATES" <<'PY'
import json, statistics, sys
tmp, steps, models, rates = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
MIB = 1024 * 1024
print("\n| model | uplink | strategy | step ms | exposed comm ms | uplink MiB/step, node 0 / node 1 | plan: MiB/step a node sends between machines | loss at the last step |")
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
for model in models:
    for rate in rates:
        base = None
        for strategy in ("full", "hsdp", "ddp"):
            name = f"{tmp}/{model}-{rate}-{strategy}"
            log = [json.loads(l) for l in open(name + ".jsonl")]
            later = log[1:]
            step = statistics.median(s["step_ms"] for s in later)
            exposed = statistics.median(s["exposed_comm_ms"] for s in later)
            b0, b1 = (int(x) / steps / MIB for x in open(name + ".bytes").read().split())
            plan = json.load(open(name + ".plan"))
            between = plan["sent_bytes_per_step"]["between_nodes"] * plan["ranks_per_node"] / MIB
            if strategy == "full":
                base = step
            speedup = "" if strategy == "full" else f" ({base / step:.2f}x full)"
            print(f"| {model} | {rate} | {strategy} | {step:.0f}{speedup} | {exposed:.0f} | {b0:.1f} / {b1:.1f} | "
                  f"{between:.1f} | {log[-1]['loss']:.4f} |")
PY
