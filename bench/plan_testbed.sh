#!/usr/bin/env bash
# The planner against multi-node runs on the testbed (tests/testbed/testbed.sh: network
# namespaces as nodes, each node's uplink shaped by tc): 2 nodes x 2 ranks, full
# sharding, HSDP (--mesh 2,2) and DDP, at each uplink shape. `fsdp plan --world-size 4
# --ranks-per-node 2 --nics-per-node 1 --link inter=RATE,LATENCY` predicts each run's step
# and exposed communication, calibrated on 2 ranks of the same strategy on one node (the
# compute, the shared memory between ranks), with the latency of a ring step between the
# nodes (MPI's TCP on busy cores) that --calibrate fits to the testbed's run at one shape
# (--calibrate-on) after that one-node run; each uplink's rate is the one tc was given,
# never fitted. The table prints both beside the measured ones, and whether the three
# strategies rank the same at each shape.
# The nodes share this machine's cores: a node is its share of them (the cores over the
# nodes), so the one-node runs and the planner run on that many (taskset), and every rank
# and the planner on OMP_NUM_THREADS=1 (--threads).
#
# Usage (as root): bench/plan_testbed.sh [--model gpt2-tiny] [--shapes "100mbit:0ms 1gbit:0ms 10gbit:0ms"]
#            [--calibrate-on 1gbit:0ms] [--steps N] [--threads T] [--fsdp PATH] [--data FILE] [--keep DIR]
# A shape is RATE:LATENCY in tc's units (a latency 0ms shapes the rate only; so does a
# kernel without netem, and the plan is then told 50us, the veths' and the bridge's). Each
# measured figure is a run's median over its steps after the first two. A benchmark, not a
# test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODEL=gpt2-tiny
SHAPES="100mbit:0ms 1gbit:0ms 10gbit:0ms"
CALIBRATE_ON=1gbit:0ms
STEPS=8
THREADS=1
KEEP=""

while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --shapes) SHAPES="$2"; shift 2 ;;
    --calibrate-on) CALIBRATE_ON="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }

TESTBED_DIR="$ROOT/tests/testbed"
# shellcheck source=../tests/testbed/testbed.sh
. "$TESTBED_DIR/testbed.sh"
testbed_check
if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && TMP="$KEEP"; else TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-plan-testbed.XXXXXX")"; fi
testbed_up 2
trap 'testbed_down; [ -n "$KEEP" ] || rm -rf "$TMP"' EXIT
testbed_hostfile 2 >"$TMP/hosts"
export OMP_NUM_THREADS=$THREADS
SHAPE="--model $MODEL --batch-size 8 --seq-len 128"

strategy_flags() {
  case "$1" in
    full) echo "--sharding full" ;;
    hsdp) echo "--sharding full --mesh 2,2" ;;
    ddp) echo "--sharding none" ;;
  esac
}

# A node's cores: the first half of the machine's.
node_cores="0-$(( $(getconf _NPROCESSORS_ONLN) / 2 - 1 ))"
# 2 ranks on a node's cores, outside the testbed (the shared memory of one node): full
# sharding (HSDP's shard groups too) and DDP.
mpi=(taskset -c "$node_cores" mpirun --bind-to none -x OMP_NUM_THREADS)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
for strategy in full ddp; do
  # shellcheck disable=SC2046,SC2086
  "${mpi[@]}" -np 2 "$FSDP" train $SHAPE --data "$DATA" --steps "$STEPS" $(strategy_flags "$strategy") \
    --log "$TMP/one-node-$strategy.jsonl" >"$TMP/one-node-$strategy.out" 2>&1 || { cat "$TMP/one-node-$strategy.out"; exit 1; }
done

link_latency=50us
for shape in $SHAPES; do
  # testbed_shape sets rate and latency of its own: these names are the script's.
  shape_rate=${shape%%:*} shape_latency=${shape#*:}
  if [ "$shape_latency" = 0ms ]; then testbed_shape "$shape_rate"; else testbed_shape "$shape_rate" "$shape_latency"; fi
  case $TESTBED_SHAPED in *netem*) echo "$shape_latency" >"$TMP/$shape_rate-$shape_latency.latency" ;;
    *) echo "$link_latency" >"$TMP/$shape_rate-$shape_latency.latency" ;; esac
  for strategy in full hsdp ddp; do
    name="$shape_rate-$shape_latency-$strategy"
    # shellcheck disable=SC2046,SC2086
    testbed_mpirun --hostfile "$TMP/hosts" -np 4 --bind-to none -x OMP_NUM_THREADS "$FSDP" train $SHAPE \
      --data "$DATA" --steps "$STEPS" $(strategy_flags "$strategy") --log "$TMP/$name.jsonl" >"$TMP/$name.out" 2>&1 ||
      { cat "$TMP/$name.out"; echo "the $name run failed" >&2; exit 1; }
  done
done

# The latency of a ring step between the nodes, fitted for each strategy to its run at
# --calibrate-on (after its one-node run), then given as the link's latency at every shape.
calibration=${CALIBRATE_ON/:/-}
calibration_rate=$(echo "${CALIBRATE_ON%%:*}" | sed 's/gbit$/Gbit\/s/; s/mbit$/Mbit\/s/; s/kbit$/kbit\/s/')
for strategy in full hsdp ddp; do
  one_node=full
  [ "$strategy" = ddp ] && one_node=ddp
  # shellcheck disable=SC2046,SC2086
  taskset -c "$node_cores" "$FSDP" plan $SHAPE --world-size 4 --ranks-per-node 2 --nics-per-node 1 \
    $(strategy_flags "$strategy") --link "inter=$calibration_rate,$(cat "$TMP/$calibration.latency")" \
    --calibrate "$TMP/one-node-$one_node.jsonl" --calibrate "$TMP/$calibration-$strategy.jsonl" --format json \
    >"$TMP/fit-$strategy.plan" 2>"$TMP/fit-$strategy.plan.err" || { cat "$TMP/fit-$strategy.plan.err"; exit 1; }
  python3 -c 'import json, sys; print("%gus" % (json.load(open(sys.argv[1]))["time"]["machine"]["inter_latency_s"] * 1e6))' \
    "$TMP/fit-$strategy.plan" >"$TMP/fit-$strategy.latency"
done

for shape in $SHAPES; do
  shape_rate=${shape%%:*} shape_latency=${shape#*:}
  # tc's units as fsdp plan's: 100mbit is 100Mbit/s.
  link_rate=$(echo "$shape_rate" | sed 's/gbit$/Gbit\/s/; s/mbit$/Mbit\/s/; s/kbit$/kbit\/s/')
  for strategy in full hsdp ddp; do
    name="$shape_rate-$shape_latency-$strategy" one_node=full
    [ "$strategy" = ddp ] && one_node=ddp
    # shellcheck disable=SC2046,SC2086
    taskset -c "$node_cores" "$FSDP" plan $SHAPE --world-size 4 --ranks-per-node 2 --nics-per-node 1 \
      $(strategy_flags "$strategy") --link "inter=$link_rate,$(cat "$TMP/fit-$strategy.latency")" \
      --calibrate "$TMP/one-node-$one_node.jsonl" --format json \
      >"$TMP/$name.plan" 2>"$TMP/$name.plan.err" || { cat "$TMP/$name.plan.err"; exit 1; }
  done
done

echo "== fsdp plan against the testbed: 2 nodes x 2 ranks of $MODEL, $(getconf _NPROCESSORS_ONLN) cores, $THREADS thread(s) a rank, $(date -u +%F)"
python3 - "$TMP" "$SHAPES" "$CALIBRATE_ON" <<'PY'
import json, statistics, sys
tmp, shapes, calibrated = sys.argv[1], sys.argv[2].split(), sys.argv[3]
def median(log, key):
    rows = [json.loads(line) for line in open(log) if line.strip()]
    return statistics.median(r[key] for r in rows if r["step"] > 2)
print("\n| uplink | strategy | measured step ms | planned | ratio | measured exposed ms | planned | ratio |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for shape in shapes:
    rate, latency = shape.split(":")
    measured, planned = {}, {}
    for strategy in ("full", "hsdp", "ddp"):
        name = f"{tmp}/{rate}-{latency}-{strategy}"
        step, exposed = median(name + ".jsonl", "step_ms"), median(name + ".jsonl", "exposed_comm_ms")
        t = json.load(open(name + ".plan"))["time"]
        measured[strategy], planned[strategy] = step, t["step_ms"]
        ratio_exposed = t["exposed_comm_ms"] / exposed if exposed > 0 else float("nan")
        print(f"| {rate} {latency} | {strategy} | {step:.1f} | {t['step_ms']:.1f} | {t['step_ms'] / step:.2f} | "
              f"{exposed:.1f} | {t['exposed_comm_ms']:.1f} | {ratio_exposed:.2f} |")
    if shape == calibrated:
        print(f"| {rate} {latency} | (the latency was fitted to these runs) | | | | | | |")
    order = lambda d: " < ".join(sorted(d, key=d.get))
    same = "the same" if order(measured) == order(planned) else "NOT the same"
    print(f"| {rate} {latency} | fastest first | {order(measured)} | {order(planned)} | {same} | | | |")
PY
