#!/bin/sh
# On the testbed (testbed.sh): 2 nodes x 2 ranks training HSDP (mesh 2,2) over a shaped
# link, node 1 fails mid-step: one of its ranks stops (stop: SIGSTOP), or its link to
# the switch goes down (link). The ranks of node 0 must notice within --comm-timeout
# (the watchdog) and the whole job end within that plus a small bound, with the
# watchdog's message naming the rank, the unit and the collective, and a non-zero
# exit. Skipped (77) where the testbed cannot run.
# Usage: watchdog_test.sh stop|link path/to/fsdp
MODE=${1:?usage: watchdog_test.sh stop|link path/to/fsdp}
FSDP=$(readlink -f "${2:?usage: watchdog_test.sh stop|link path/to/fsdp}")
TESTBED_DIR=$(dirname "$0")
. "$TESTBED_DIR/testbed.sh"
set -eu
# A step must not reach it: a sanitized first step, four ranks beside another test's on two
# loaded cores, once did at 5 s (the ranks more than 5 s apart in it).
COMM_TIMEOUT=5
[ -n "${FSDP_SANITIZER:-}" ] && COMM_TIMEOUT=15
START_LIMIT=60
# Past the timeout: MPI_Abort's teardown, and for a lost link Open MPI's daemons giving
# up on the unreachable node (the TCP retries testbed_up shortens to ~6 s).
case $MODE in
  stop) EXIT_LIMIT=$((COMM_TIMEOUT + 15)) ;;
  link) EXIT_LIMIT=$((COMM_TIMEOUT + 20)) ;;
  *) echo "watchdog_test.sh: unknown mode '$MODE' (stop or link)"; exit 2 ;;
esac
testbed_check
tmp=$(mktemp -d)
testbed_up 2
trap 'testbed_down; rm -rf "$tmp"' EXIT
testbed_shape 1gbit 1ms
testbed_hostfile 2 >"$tmp/hosts"
cat "$TESTBED_DIR"/*.sh "$TESTBED_DIR"/*.py >"$tmp/corpus.txt"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
past() { [ "$(awk -v t="$(elapsed "$1")" -v l="$2" 'BEGIN { print (t > l) }')" = 1 ]; }
fail() {
  echo "FAIL: $*"
  echo "--- job output ---"
  cat "$tmp/out"
  exit 1
}

# --peak-gflops: no MFU probe, whose quarter second of products on every rank ends in a
# barrier that the ranks reached more than COMM_TIMEOUT apart once, four sanitized ranks
# beside another test's on two loaded cores (the job ended before its first step).
(
  set +e
  testbed_mpirun --hostfile "$tmp/hosts" -np 4 "$FSDP" train --model gpt2-tiny --data "$tmp/corpus.txt" \
    --steps 100000 --batch-size 2 --seq-len 64 --mesh 2,2 --comm-timeout $COMM_TIMEOUT --peak-gflops 100 \
    >"$tmp/out" 2>&1
  echo $? >"$tmp/status"
) &
start=$(now)
until grep -q '^step ' "$tmp/out" 2>/dev/null; do
  [ -e "$tmp/status" ] && fail "the job ended (status $(cat "$tmp/status")) before its first step"
  past "$start" $START_LIMIT && fail "no step after $START_LIMIT s"
  sleep 0.2
done

if [ "$MODE" = stop ]; then
  victim=""
  for p in $(ip netns pids "$FSDP_TESTBED-n1"); do
    [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$FSDP" ] &&
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=3' && victim=$p
  done
  [ -n "$victim" ] || fail "no rank 3 in node 1"
  kill -STOP "$victim"
  echo "stopped rank 3 (PID $victim, node 1)"
else
  testbed_link 1 down
  echo "took node 1's link down"
fi
failed=$(now)
until [ -e "$tmp/status" ]; do
  past "$failed" $EXIT_LIMIT && fail "the job was still running $EXIT_LIMIT s after node 1 failed"
  sleep 0.2
done
took=$(elapsed "$failed")
wait
[ "$(cat "$tmp/status")" -ne 0 ] || fail "the job exited 0"
# e.g. "fsdp: error: rank 0: all-gather block 1 (MPI_Iallgather) has not finished after 3 s"
pattern="fsdp: error: rank [01]: (all-gather|reduce-scatter|all-reduce|replicate all-reduce) [^(]+ \\([^)]+\\) has not finished after $COMM_TIMEOUT s \\(--comm-timeout\\)"
grep -Eq "$pattern" "$tmp/out" || fail "no watchdog message from a rank of node 0"
grep -E 'has not finished' "$tmp/out"
echo "PASS: node 1 failed ($MODE); the job ended ${took} s later (--comm-timeout $COMM_TIMEOUT), status $(cat "$tmp/status")"
