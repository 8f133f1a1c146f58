#!/usr/bin/env bash
# The planner against multi-node runs on the testbed (tests/testbed/testbed.sh: network
# namespaces as nodes, each node's uplink shaped: its rate by tbf, its latency by netem or
# delay_link): N nodes x 2 ranks, full sharding, HSDP (--mesh N,2) and DDP, at each uplink
# shape. `fsdp plan --world-size 2N --ranks-per-node 2 --nics-per-node 1 --link
# inter=RATE,LATENCY` predicts each run's step and exposed communication, calibrated on 2
# ranks of the same strategy on one node (the compute, the shared memory between ranks),
# with the cost of a ring step between the nodes, which --calibrate fits to the testbed's
# median runs at the --calibrate-on shapes: at one shape a latency the transport adds to
# the wire's; at two of different latencies also how many of the wire's latencies a ring
# step waits for (MPI's rendezvous, TCP's windows), a line through the two. Each uplink's
# rate and latency are then the ones it was shaped to, never fitted to the run predicted.
# The nodes share this machine's cores: a node is its share of them (the cores over the
# nodes: taskset to whole cores, a cgroup's CPU quota to a fraction of one), so the
# one-node runs and the planner run on that share, and every rank on OMP_NUM_THREADS=1.
#
# Usage (as root): bench/plan_testbed.sh [--model gpt2-tiny] [--nodes 2]
#            [--shapes "100mbit:0ms 1gbit:0ms 10gbit:0ms"] [--calibrate-on "1gbit:0ms 1gbit:5ms"]
#            [--repeats R] [--steps N] [--threads T] [--fsdp PATH] [--data FILE] [--keep DIR]
#            [--replan DIR]     (the plans again, of the runs an earlier --keep DIR kept)
# A shape is RATE:LATENCY in tc's units; a latency 0ms shapes the rate only (the plan is
# then told 50us, the veths' and the bridge's); on a kernel without netem the latency is
# delay_link's, built beside fsdp (tests/delay_link). The calibration shapes are run
# whether listed in --shapes or not. Each strategy runs R times at each shape: R rounds
# of every shape in turn, each of the three strategies in turn, so that a burst of load
# on a shared machine falls on all of them alike. A measured figure is the median of the
# runs' medians over their steps after the first two, printed with the runs' range.
# Strategies whose ranges overlap are tied: their order is the noise's, and any order of
# them counts as the same. The one-node runs are made R times too, and the median one
# calibrates. A run from which the host took over 2% of the cores (steal time, on a VM)
# is run again, up to twice. A benchmark, not a test: it checks nothing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FSDP="$ROOT/build/fsdp"
DATA="$ROOT/../shared/data/tinyshakespeare.txt"
MODEL=gpt2-tiny
NODES=2
SHAPES="100mbit:0ms 1gbit:0ms 10gbit:0ms"
CALIBRATE_ON="1gbit:0ms 1gbit:5ms"
REPEATS=3
STEPS=8
THREADS=1
KEEP=""
REPLAN=""

while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --nodes) NODES="$2"; shift 2 ;;
    --shapes) SHAPES="$2"; shift 2 ;;
    --calibrate-on) CALIBRATE_ON="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --fsdp) FSDP="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --keep) KEEP="$2"; shift 2 ;;
    --replan) REPLAN="$2"; KEEP="$2"; shift 2 ;;
    -h|--help) sed -n '2,/checks nothing/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$FSDP" ] || { echo "no $FSDP: build first (scripts/build.sh)" >&2; exit 1; }
[ -r "$DATA" ] || { echo "no data file $DATA" >&2; exit 1; }
case "$NODES" in [2-9]) ;; *) echo "--nodes: $NODES is not a count of 2 to 9 nodes" >&2; exit 2 ;; esac
case "$REPEATS" in ''|*[!0-9]*|0) echo "--repeats: '$REPEATS' is not a positive count of runs" >&2; exit 2 ;; esac
[ -z "$REPLAN" ] || [ -f "$REPLAN/one-node-full-1.jsonl" ] ||
  { echo "--replan: '$REPLAN' holds no runs kept by --keep (no one-node-full-1.jsonl)" >&2; exit 2; }
case "$(echo "$CALIBRATE_ON" | wc -w)" in 1|2) ;; *) echo "--calibrate-on: one or two shapes" >&2; exit 2 ;; esac
TESTBED_DELAY_LINK="$(dirname "$FSDP")/tests/delay_link"
[ -x "$TESTBED_DELAY_LINK" ] || TESTBED_DELAY_LINK=""

TESTBED_DIR="$ROOT/tests/testbed"
# shellcheck source=../tests/testbed/testbed.sh
. "$TESTBED_DIR/testbed.sh"
[ -n "$REPLAN" ] || testbed_check
if [ -n "$KEEP" ]; then mkdir -p "$KEEP" && TMP="$KEEP"; else TMP="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-plan-testbed.XXXXXX")"; fi
CGROUP=""
cleanup() {
  testbed_down
  [ -z "$CGROUP" ] || rmdir "$CGROUP"
  [ -n "$KEEP" ] || rm -rf "$TMP"
}
trap cleanup EXIT
[ -n "$REPLAN" ] || testbed_up "$NODES"
testbed_hostfile "$NODES" >"$TMP/hosts"
export OMP_NUM_THREADS=$THREADS
SHAPE="--model $MODEL --batch-size 8 --seq-len 128"
PLAN="--world-size $((2 * NODES)) --ranks-per-node 2 --nics-per-node 1"
STRATEGIES="full hsdp ddp"

strategy_flags() {
  case "$1" in
    full) echo "--sharding full" ;;
    hsdp) echo "--sharding full --mesh $NODES,2" ;;
    ddp) echo "--sharding none" ;;
  esac
}

# on_a_node COMMAND...: COMMAND on a node's share of the cores.
cores=$(getconf _NPROCESSORS_ONLN)
if [ $((cores % NODES)) = 0 ]; then
  on_a_node() { taskset -c "0-$((cores / NODES - 1))" "$@"; }
else
  # A fraction of a core: a CPU quota of cores/nodes in a cgroup of the script's own.
  if [ -d /sys/fs/cgroup/cpu ] && [ -w /sys/fs/cgroup/cpu ]; then
    CGROUP=/sys/fs/cgroup/cpu/fsdp-plan-testbed-$$
    mkdir "$CGROUP"
    echo 10000 >"$CGROUP/cpu.cfs_period_us"
    echo $((10000 * cores / NODES)) >"$CGROUP/cpu.cfs_quota_us"
  elif [ -w /sys/fs/cgroup/cgroup.subtree_control ]; then
    CGROUP=/sys/fs/cgroup/fsdp-plan-testbed-$$
    mkdir "$CGROUP"
    echo "$((10000 * cores / NODES)) 10000" >"$CGROUP/cpu.max"
  else
    echo "a node is $cores/$NODES of a core, and no cgroup's CPU quota can give it here" >&2
    exit 1
  fi
  on_a_node() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CGROUP" "$@"; }
fi
echo "a node: $cores/$NODES of this machine's $cores cores ($([ -n "$CGROUP" ] && echo "a CPU quota, $CGROUP" || echo taskset))"


# A tc time in microseconds; tc's rate as fsdp plan's (100mbit is 100Mbit/s).
to_us() { echo "$1" | awk '/us$/ { print $1 + 0; next } /ms$/ { print ($1 + 0) * 1000; next } { print ($1 + 0) * 1e6 }'; }
plan_rate() { echo "$1" | sed 's/gbit$/Gbit\/s/; s/mbit$/Mbit\/s/; s/kbit$/kbit\/s/'; }

RUN_SHAPES="$SHAPES"
for shape in $CALIBRATE_ON; do case " $RUN_SHAPES " in *" $shape "*) ;; *) RUN_SHAPES="$RUN_SHAPES $shape" ;; esac; done
# The CPU time the host has taken from this machine (a VM's steal time), in seconds.
steal_s() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / { print $9 / hz }' /proc/stat; }

# measured NAME COMMAND...: COMMAND, which logs to $TMP/NAME.jsonl, again while the host
# takes over 2% of the cores from it (up to twice).
measured() {
  name=$1
  shift
  for attempt in 1 2 3; do
    before=$(steal_s)
    started=$(date +%s.%N)
    "$@" >"$TMP/$name.out" 2>&1 || { cat "$TMP/$name.out"; echo "the $name run failed" >&2; exit 1; }
    share=$(awk -v s="$(steal_s)" -v b="$before" -v t0="$started" -v t1="$(date +%s.%N)" -v c="$cores" \
      'BEGIN { printf "%.3f", (s - b) / ((t1 - t0) * c) }')
    echo "$name $share" >>"$TMP/steal"
    awk -v x="$share" 'BEGIN { exit !(x <= 0.02) }' && return
    echo "$name (attempt $attempt): the host took $share of the cores from it (steal time)" >&2
  done
}

if [ -z "$REPLAN" ]; then
  # 2 ranks on a node's share, outside the testbed (the shared memory of one node): full
  # sharding (HSDP's shard groups too) and DDP.
  mpi=(mpirun --bind-to none -x OMP_NUM_THREADS)
  [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
  for repeat in $(seq "$REPEATS"); do
    for strategy in full ddp; do
      # shellcheck disable=SC2046,SC2086
      measured "one-node-$strategy-$repeat" on_a_node "${mpi[@]}" -np 2 "$FSDP" train $SHAPE --data "$DATA" \
        --steps "$STEPS" $(strategy_flags "$strategy") --log "$TMP/one-node-$strategy-$repeat.jsonl"
    done
  done
  for repeat in $(seq "$REPEATS"); do
    for shape in $RUN_SHAPES; do
      shape_rate=${shape%%:*} shape_latency=${shape#*:}
      if [ "$shape_latency" = 0ms ]; then testbed_shape "$shape_rate"; else testbed_shape "$shape_rate" "$shape_latency"; fi
      # The latency the link was shaped to, in us (0: the veths' own).
      case $TESTBED_SHAPED in
        *"latency $shape_latency ("*) to_us "$shape_latency" >"$TMP/$shape.shaped_us" ;;
        *) echo 0 >"$TMP/$shape.shaped_us"
          [ "$shape_latency" = 0ms ] || echo "warning: the latency of $shape was not shaped" >&2 ;;
      esac
      for strategy in $STRATEGIES; do
        # shellcheck disable=SC2046,SC2086
        measured "$shape-$strategy-$repeat" testbed_mpirun --hostfile "$TMP/hosts" -np $((2 * NODES)) --bind-to none \
          -x OMP_NUM_THREADS "$FSDP" train $SHAPE --data "$DATA" --steps "$STEPS" $(strategy_flags "$strategy") \
          --log "$TMP/$shape-$strategy-$repeat.jsonl"
      done
    done
  done
fi

# The log of the median run (by its median step) of strategy $2 at shape $1 (or on one node).
median_run() {
  python3 - "$TMP/$1-$2" "$REPEATS" <<'PY'
import json, statistics, sys
def step(log):
    return statistics.median(json.loads(l)["step_ms"] for l in open(log) if l.strip() and json.loads(l)["step"] > 2)
logs = sorted((f"{sys.argv[1]}-{r}.jsonl" for r in range(1, int(sys.argv[2]) + 1)), key=step)
print(logs[len(logs) // 2])
PY
}
# HSDP's shard groups are full sharding's on one node.
one_node_log() { if [ "$1" = ddp ]; then median_run one-node ddp; else median_run one-node full; fi; }

# A ring step between the nodes, for each strategy: fitted to its median run at each
# calibration shape (after its median one-node run), then a line in the shaped latency:
# transport_us + waits x latency_us (waits 1 from one shape).
for strategy in $STRATEGIES; do
  for shape in $CALIBRATE_ON; do
    shaped=$(cat "$TMP/$shape.shaped_us")
    told=50us
    [ "$shaped" = 0 ] || told="${shaped}us"
    # shellcheck disable=SC2046,SC2086
    on_a_node "$FSDP" plan $SHAPE $PLAN $(strategy_flags "$strategy") --link "inter=$(plan_rate "${shape%%:*}"),$told" \
      --calibrate "$(one_node_log "$strategy")" --calibrate "$(median_run "$shape" "$strategy")" --format json \
      >"$TMP/fit-$shape-$strategy.plan" 2>"$TMP/fit-$strategy.plan.err" || { cat "$TMP/fit-$strategy.plan.err"; exit 1; }
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["time"]["machine"]["inter_latency_s"] * 1e6, sys.argv[2])' \
      "$TMP/fit-$shape-$strategy.plan" "$shaped"
  done | awk 'NR == 1 { a = $1; la = $2 } NR == 2 { b = $1; lb = $2 }
    END { waits = NR == 2 && lb != la ? (b - a) / (lb - la) : 1; print a - waits * la, waits }' >"$TMP/fit-$strategy"
done

for shape in $RUN_SHAPES; do
  for strategy in $STRATEGIES; do
    latency=$(awk -v l="$(cat "$TMP/$shape.shaped_us")" '{ printf "%.1fus", $1 + $2 * l }' "$TMP/fit-$strategy")
    # shellcheck disable=SC2046,SC2086
    on_a_node "$FSDP" plan $SHAPE $PLAN $(strategy_flags "$strategy") --link "inter=$(plan_rate "${shape%%:*}"),$latency" \
      --calibrate "$(one_node_log "$strategy")" --format json \
      >"$TMP/$shape-$strategy.plan" 2>"$TMP/$shape-$strategy.plan.err" || { cat "$TMP/$shape-$strategy.plan.err"; exit 1; }
  done
done

echo "== fsdp plan against the testbed: $NODES nodes x 2 ranks of $MODEL, $cores cores, $THREADS thread(s) a rank," \
  "$REPEATS runs a strategy and shape, $(date -u +%F)"
[ ! -f "$TMP/steal" ] || awk '{ last[$1] = $2; if ($2 > 0.02) again++ } END {
  for (n in last) if (last[n] > top) top = last[n]
  printf "steal time: %d run(s) run again; the most the host took from a run kept: %.1f%% of the cores\n", again, 100 * top }' \
  "$TMP/steal"
python3 - "$TMP" "$RUN_SHAPES" "$CALIBRATE_ON" "$STRATEGIES" "$REPEATS" <<'PY'
import itertools, json, statistics, sys
tmp, shapes, calibrated, strategies, repeats = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split(), int(sys.argv[5])
def run_median(log, key):
    rows = [json.loads(line) for line in open(log) if line.strip()]
    return statistics.median(r[key] for r in rows if r["step"] > 2)
for s in strategies:
    transport, waits = map(float, open(f"{tmp}/fit-{s}").read().split())
    print(f"{s}: a ring step between the nodes waits {transport:.0f} us + {waits:.2f} x the link's latency")
print("\n| uplink | strategy | measured step ms (range) | planned | ratio | measured exposed ms | planned | ratio |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for shape in shapes:
    rate, latency = shape.split(":")
    measured, spread, planned = {}, {}, {}
    for s in strategies:
        steps = [run_median(f"{tmp}/{shape}-{s}-{r}.jsonl", "step_ms") for r in range(1, repeats + 1)]
        exposed = statistics.median(run_median(f"{tmp}/{shape}-{s}-{r}.jsonl", "exposed_comm_ms") for r in range(1, repeats + 1))
        t = json.load(open(f"{tmp}/{shape}-{s}.plan"))["time"]
        measured[s], spread[s], planned[s] = statistics.median(steps), (min(steps), max(steps)), t["step_ms"]
        ratio_exposed = t["exposed_comm_ms"] / exposed if exposed > 0 else float("nan")
        print(f"| {rate} {latency} | {s} | {measured[s]:.1f} ({spread[s][0]:.0f}-{spread[s][1]:.0f}) | {t['step_ms']:.1f} | "
              f"{t['step_ms'] / measured[s]:.2f} | {exposed:.1f} | {t['exposed_comm_ms']:.1f} | {ratio_exposed:.2f} |")
    if shape in calibrated:
        print(f"| {rate} {latency} | (calibration: the ring step was fitted to these runs) | | | | | | |")
    # Two strategies are tied when their runs' ranges overlap; only the untied pairs
    # must be in the planned order.
    tied = lambda a, b: spread[a][0] <= spread[b][1] and spread[b][0] <= spread[a][1]
    wrong = [(a, b) for a, b in itertools.combinations(strategies, 2)
             if not tied(a, b) and (measured[a] < measured[b]) != (planned[a] < planned[b])]
    ties = [f"{a} ~ {b}" for a, b in itertools.combinations(strategies, 2) if tied(a, b)]
    order = lambda d: " < ".join(sorted(d, key=d.get))
    verdict = "NOT the same: " + ", ".join(f"{a}/{b}" for a, b in wrong) if wrong else "the same"
    if ties and not wrong:
        verdict += " (tied: " + ", ".join(ties) + ")"
    print(f"| {rate} {latency} | fastest first | {order(measured)} | {order(planned)} | {verdict} | | | |")
PY
