#!/bin/sh
# A rank that dies mid-step (kill: SIGKILL, as the OOM killer does it) or stops
# (stop: SIGSTOP, as a hung node or a debugger does it) must end the whole job within
# a bounded time, with a message naming the rank, and leave no rank behind waiting in
# a collective. A dead rank is noticed by mpirun; a stopped one only by the watchdog
# (--comm-timeout) of the ranks waiting for it. stop-setup stops rank 1 as soon as it
# exists, before step 1: in MPI's start-up (bounded by FSDP_COMM_TIMEOUT, the options
# being read after it) or in the setup that follows.
# Usage: rank_death_test.sh kill|stop|stop-setup path/to/fsdp MPIRUN...
MODE=${1:?usage: rank_death_test.sh kill|stop|stop-setup path/to/fsdp MPIRUN...}
FSDP=${2:?usage: rank_death_test.sh kill|stop|stop-setup path/to/fsdp MPIRUN...}
shift 2
START_LIMIT=60  # seconds for the job to reach its first step
COMM_TIMEOUT=5  # --comm-timeout of the stop cases: a slow (sanitized) step must not reach it
TAGS=""
case $MODE in
  kill) SIGNAL=KILL EXIT_LIMIT=30 ;;  # seconds for the job to end once rank 1 is dead
  # The watchdog's timeout, then MPI_Abort's teardown.
  stop) SIGNAL=STOP EXIT_LIMIT=$((COMM_TIMEOUT + 15)) ;;
  # Before MPI_Init_thread returns a rank knows no rank: mpirun tags its lines.
  stop-setup) SIGNAL=STOP EXIT_LIMIT=$((COMM_TIMEOUT + 15)) TAGS=--tag-output ;;
  *) echo "rank_death_test.sh: unknown mode '$MODE' (kill, stop or stop-setup)"; exit 2 ;;
esac
fsdp_exe=$(readlink -f "$FSDP") || exit 2
tmp=$(mktemp -d) || exit 2
ranks=""

# Ends whatever this test started that is still running: the ranks first, so that
# the launcher reaps them, then the launcher.
cleanup() {
  launcher=""
  if [ -s "$tmp/mpirun.pid" ] && [ ! -e "$tmp/status" ]; then
    launcher=$(cat "$tmp/mpirun.pid")
    ranks="$ranks $(descendants "$launcher")"
  fi
  for p in $ranks; do is_rank "$p" && kill -9 "$p" 2>/dev/null; done  # SIGKILL ends a stopped process too
  [ -n "$launcher" ] && kill -9 "$launcher" 2>/dev/null
  wait
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

fail() {
  echo "FAIL: $*"
  echo "--- job output ---"
  cat "$tmp/out" 2>/dev/null
  exit 1
}

. "$(dirname "$0")/job_processes.sh"

# About 20 KB of word salad: bytes are tokens, so any ASCII text will do.
awk 'BEGIN {
  split("the of rank all gather shard reduce scatter step loss model token layer unit stream event", w, " ")
  srand(7)
  for (n = 0; n < 20000; n += length(word) + 1) { word = w[int(rand() * 16) + 1]; printf "%s ", word }
  print ""
}' >"$tmp/corpus.txt"

# The subshell records the launcher's PID (sh -c execs it) and, once it ends, its status.
(
  FSDP_COMM_TIMEOUT=$COMM_TIMEOUT sh -c 'echo $$ >"$0"; exec "$@"' "$tmp/mpirun.pid" "$@" -x FSDP_COMM_TIMEOUT $TAGS \
    -np 2 "$FSDP" train --model gpt2-tiny --data "$tmp/corpus.txt" --steps 100000 --batch-size 2 --seq-len 64 \
    --comm-timeout $COMM_TIMEOUT >"$tmp/out" 2>&1
  echo $? >"$tmp/status"
) &

start=$(now)
if [ "$MODE" = stop-setup ]; then
  victim=""
  until [ -n "$victim" ]; do
    [ -e "$tmp/status" ] && fail "the job ended (status $(cat "$tmp/status")) before rank 1 started"
    past "$start" $START_LIMIT && fail "no rank 1 after ${START_LIMIT} s"
    [ -s "$tmp/mpirun.pid" ] && find_ranks "$(cat "$tmp/mpirun.pid")" 1
    [ -n "$victim" ] || sleep 0.01
  done
else
  until grep -q '^step ' "$tmp/out" 2>/dev/null; do
    [ -e "$tmp/status" ] && fail "the job ended (status $(cat "$tmp/status")) before its first step"
    past "$start" $START_LIMIT && fail "no step after ${START_LIMIT} s"
    sleep 0.2
  done
  find_ranks "$(cat "$tmp/mpirun.pid")" 1
  [ -n "$victim" ] || fail "no process of the job has OMPI_COMM_WORLD_RANK=1"
  [ "$(echo "$ranks" | wc -w)" -eq 2 ] || fail "expected 2 rank processes, found:$ranks"
fi

kill -s $SIGNAL "$victim"
killed=$(now)
# Rank 0 may start after rank 1: it is looked for too, to check below that it ends.
until [ "$(echo "$ranks" | wc -w)" -eq 2 ] || [ -e "$tmp/status" ]; do
  sleep 0.01
  find_ranks "$(cat "$tmp/mpirun.pid")" 1
done
last=$(grep '^step ' "$tmp/out" | tail -n 1 | awk '{ print $2 }')
echo "sent SIG$SIGNAL to rank 1 (PID $victim) at step ${last:-0 (before step 1)}"
until [ -e "$tmp/status" ]; do
  [ "$(awk -v t="$(elapsed "$killed")" -v l=$EXIT_LIMIT 'BEGIN { print (t > l) }')" = 1 ] &&
    fail "the job was still running ${EXIT_LIMIT} s after SIG$SIGNAL to rank 1: a rank was left waiting"
  sleep 0.2
done
took=$(elapsed "$killed")
wait
status=$(cat "$tmp/status")

[ "$status" -ne 0 ] || fail "the job exited 0 after SIG$SIGNAL to rank 1"
if [ "$MODE" = kill ]; then
  # Open MPI 4.1 says e.g. "mpirun noticed that process rank 1 with PID 0 on node vm
  # exited on signal 9 (Killed)." (the PID it prints is not always the real one).
  grep -Eq 'process rank 1 with PID [0-9]+ on node .+ exited on signal 9' "$tmp/out" ||
    fail "the output does not say that rank 1 exited on signal 9"
elif [ "$MODE" = stop-setup ]; then
  # e.g. "[1,0]<stderr>:fsdp: error: MPI_Init_thread has not finished after 5 s", or
  # "... rank 0: MPI_Comm_idup has not finished ..." when rank 1 stopped after its start-up.
  # (Rank 1 may say so too: mpirun continues it to end it.)
  grep -q "<stdout>:step " "$tmp/out" && fail "the job made a step with rank 1 stopped"
  grep -Eq "^\[1,0\]<stderr>:fsdp: error: .+ has not finished after $COMM_TIMEOUT s \(--comm-timeout\)" "$tmp/out" ||
    fail "the output lacks rank 0's watchdog message"
  grep -E 'has not finished' "$tmp/out"
else
  # e.g. "fsdp: error: rank 0: all-gather block 1 (MPI_Iallgather) has not finished after 3 s"
  grep -Eq "fsdp: error: rank 0: (all-gather|reduce-scatter|all-reduce) [^(]+ \([^)]+\) has not finished after $COMM_TIMEOUT s \(--comm-timeout\)" "$tmp/out" ||
    fail "the output lacks the watchdog's message naming rank 0, the unit and the collective"
  grep -E 'has not finished' "$tmp/out"
fi
left=""
for p in $ranks; do is_rank "$p" && left="$left $p"; done
[ -z "$left" ] || fail "rank processes still running after the job ended:$left"

echo "PASS: the job ended ${took} s after SIG$SIGNAL to rank 1, status $status"
