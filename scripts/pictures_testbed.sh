#!/usr/bin/env bash
# The HSDP picture's runs (scripts/pictures.sh): on the testbed of tests/testbed (2 network
# namespaces as nodes, 2 ranks each), fsdp train with flat full sharding over 4 ranks and
# with HSDP (--mesh 2,2: sharded within a node, replicated across the two), each with its
# log, the bytes each node's uplink sent over the run (its switch port's counter), and
# `fsdp plan --ranks-per-node 2` of it.
# Usage (as root): scripts/pictures_testbed.sh FSDP DATA OUTDIR STEPS TRAIN_FLAGS...
set -euo pipefail
FSDP=$1 DATA=$2 D=$3 STEPS=$4
shift 4
TESTBED_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/testbed" && pwd)"
# shellcheck source=../tests/testbed/testbed.sh
. "$TESTBED_DIR/testbed.sh"
testbed_check
testbed_up 2
trap 'testbed_down' EXIT
testbed_hostfile 2 >"$D/hsdp_hosts"
sent_bytes() { in_ns sw cat "/sys/class/net/port$1/statistics/rx_bytes"; }
for strategy in full hsdp; do
  mesh=()
  [ "$strategy" = hsdp ] && mesh=(--mesh 2,2)
  before0=$(sent_bytes 0) before1=$(sent_bytes 1)
  testbed_mpirun --hostfile "$D/hsdp_hosts" -np 4 --bind-to none "$FSDP" train "$@" \
    --data "$DATA" --steps "$STEPS" "${mesh[@]}" --log "$D/hsdp_$strategy.jsonl"
  sent0=$(( $(sent_bytes 0) - before0 )) sent1=$(( $(sent_bytes 1) - before1 ))
  echo "{\"steps\": $STEPS, \"node_sent_bytes\": [$sent0, $sent1]}" >"$D/hsdp_$strategy.bytes.json"
  OMP_NUM_THREADS=1 "$FSDP" plan --world-size 4 --ranks-per-node 2 "$@" "${mesh[@]}" --format json \
    >"$D/hsdp_$strategy.plan.json"
done
rm -f "$D/hsdp_hosts"
