#!/bin/sh
# Preemption loses nothing (docs/architecture.md, "Preemption"). SIGTERM, SIGINT or SIGUSR1
# on any one rank stops every rank after the same step, with a checkpoint of that step,
# and exit status 75; --resume auto then logs what the uninterrupted run logs.
#   stop:   SIGTERM to rank 1 alone, then (resumed) SIGUSR1 to mpirun, which forwards it
#           to every rank; resumed again to the end: the log's 400 steps, each once, equal
#           the uninterrupted run's (==). Without --checkpoint-dir, SIGINT to rank 0: the
#           job says that nothing could be saved and exits 130.
#   second: a second signal while the stop's checkpoint is written (SIGUSR1, then SIGTERM
#           to the same rank: its default action, at once), and the grace period running
#           out (SIGUSR1, then SIGKILL to another rank): each job ends at once, and
#           --resume auto continues from the newest complete checkpoint, every step it
#           logs equal to the uninterrupted run's; no temporary file is left behind.
# Usage: preempt_test.sh stop|second path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
MODE=${1:?usage: preempt_test.sh stop|second path/to/fsdp PYTHON SOURCE_DIR MPIRUN...}
shift
. "$(dirname "$0")/train_test_setup.sh"
set +e
MPIRUN="$*" # the test's command has no spaces in its words
STEP_LIMIT=120 # seconds for a job to reach a step, or to end once stopped
fsdp_exe=$(readlink -f "$FSDP") || exit 2
. "$(dirname "$0")/job_processes.sh"
ranks=""

cleanup() {
  if [ -s "$tmp/mpirun.pid" ] && [ ! -e "$tmp/status" ]; then
    launcher=$(cat "$tmp/mpirun.pid")
    for p in $(descendants "$launcher"); do is_rank "$p" && kill -9 "$p" 2>/dev/null; done
    kill -9 "$launcher" 2>/dev/null
  fi
  wait
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

fail() {
  echo "FAIL: $*"
  echo "--- job output ---"
  tail -n 25 "$tmp/out" 2>/dev/null
  exit 1
}

# launch ARGS...: `fsdp train ARGS` on 2 ranks in the background; the launcher's PID goes
# to $tmp/mpirun.pid, its output to $tmp/out, its status, once it ends, to $tmp/status.
launch() {
  rm -f "$tmp/status" "$tmp/mpirun.pid"
  (
    sh -c 'echo $$ >"$0"; exec "$@"' "$tmp/mpirun.pid" $MPIRUN -np 2 "$FSDP" train "$@" >"$tmp/out" 2>&1
    echo $? >"$tmp/status"
  ) &
  start=$(now)
  until [ -s "$tmp/mpirun.pid" ]; do sleep 0.05; done
  mpirun_pid=$(cat "$tmp/mpirun.pid")
}

lines() { if [ -e "$1" ]; then wc -l <"$1"; else echo 0; fi; }

# wait_for_step LOG N: until the job's log has N lines (steps).
wait_for_step() {
  until [ "$(lines "$1")" -ge "$2" ]; do
    [ -e "$tmp/status" ] && fail "the job ended (status $(cat "$tmp/status")) before step $2"
    past "$start" $STEP_LIMIT && fail "no step $2 after ${STEP_LIMIT} s"
    sleep 0.05
  done
}

# wait_for_end: until the job has ended, then checks that no rank is left.
wait_for_end() {
  signalled=$(now)
  until [ -e "$tmp/status" ]; do
    past "$signalled" $STEP_LIMIT && fail "the job was still running ${STEP_LIMIT} s after the signal"
    sleep 0.05
  done
  wait
  status=$(cat "$tmp/status")
  left=""
  for p in $ranks; do is_rank "$p" && left="$left $p"; done
  [ -z "$left" ] || fail "rank processes still running after the job ended:$left"
}

# signal_rank SIGNAL RANK: sends SIGNAL to that rank's process alone.
signal_rank() {
  find_ranks "$mpirun_pid" "$2"
  [ -n "$victim" ] || fail "no process of the job has OMPI_COMM_WORLD_RANK=$2"
  kill -"$1" "$victim"
}

# expect_stop LOG SIGNAL: the job stopped after its log's last step, by SIGNAL, with a
# complete checkpoint of that step and status 75; sets stopped to that step.
expect_stop() {
  [ "$status" = 75 ] || fail "the job stopped by $2 exited $status, not 75"
  stopped=$(tail -n 1 "$1" | sed 's/^{"step":\([0-9]*\),.*/\1/')
  grep -q "^stopped by $2 after step $stopped of [0-9]*: checkpoint step $stopped is complete" "$tmp/out" ||
    fail "the output does not say that $2 stopped the job after step $stopped, its checkpoint complete"
  step_dir=$tmp/ck/$(printf 'step-%08d' "$stopped")
  [ -s "$step_dir/metadata.json" ] || fail "no complete checkpoint $step_dir"
  echo "$2: stopped after step $stopped, status 75, $step_dir complete"
}

# compare LOG STEPS: every line of LOG equals the uninterrupted run's line of its step
# (loss, grad norm, learning rate: ==), and steps 1..STEPS are all there (ONCE: once each).
compare() {
  "$PYTHON" - "$tmp/reference.jsonl" "$1" "$2" "$3" <<'PY' || exit 1
import json, sys
read = lambda path: [json.loads(line) for line in open(path)]
reference, logged, steps, once = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "once"
seen = [r["step"] for r in logged]
if once:
    assert seen == list(range(1, steps + 1)), f"steps logged: {seen}"
else:
    assert sorted(set(seen)) == list(range(1, steps + 1)), f"steps logged: {seen}"
key = lambda r: (r["loss"], r["grad_norm"], r["lr"])
bad = [r["step"] for r in logged if key(r) != key(reference[r["step"] - 1])]
assert not bad, f"steps {bad} differ from the uninterrupted run"
print(f"{len(logged)} lines logged over the runs, steps 1..{steps} all there, each equal to the uninterrupted run's")
PY
}

case $MODE in
stop)
  ARGS="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 --global-batch-size 4 --steps 400
    --lr 2e-3 --warmup 2 --data $tmp/corpus.txt"
  timeout 300 $MPIRUN -np 2 "$FSDP" train $ARGS --log "$tmp/reference.jsonl" >"$tmp/out" 2>&1 ||
    fail "the uninterrupted job failed"

  # Nowhere to save: said, and 128 + SIGINT.
  launch $ARGS --log "$tmp/nodir.jsonl"
  wait_for_step "$tmp/nodir.jsonl" 20
  signal_rank INT 0
  wait_for_end
  [ "$status" = 130 ] || fail "the job stopped by SIGINT without --checkpoint-dir exited $status, not 130"
  grep -q "^fsdp: stopped by SIGINT after step [0-9]* of 400: nothing could be saved (no --checkpoint-dir); exit status 130" \
    "$tmp/out" || fail "the job does not say that nothing could be saved"
  echo "SIGINT without --checkpoint-dir: status 130, $(grep '^fsdp: stopped' "$tmp/out")"

  CK="--checkpoint-dir $tmp/ck --checkpoint-every 100 --keep-last 2 --resume auto --log $tmp/run.jsonl"
  launch $ARGS $CK
  wait_for_step "$tmp/run.jsonl" 30
  signal_rank TERM 1 # one rank alone, as a user's kill
  wait_for_end
  expect_stop "$tmp/run.jsonl" SIGTERM
  first=$stopped

  launch $ARGS $CK
  wait_for_step "$tmp/run.jsonl" $((first + 30))
  find_ranks "$mpirun_pid" 0
  kill -USR1 "$mpirun_pid" # forwarded by mpirun to every rank
  wait_for_end
  grep -q "^resume: from '$tmp/ck/$(printf 'step-%08d' "$first")' at step $first " "$tmp/out" ||
    fail "the second job did not resume from step $first"
  expect_stop "$tmp/run.jsonl" SIGUSR1

  timeout 300 $MPIRUN -np 2 "$FSDP" train $ARGS $CK >"$tmp/out" 2>&1 || fail "the last resumed job failed"
  compare "$tmp/run.jsonl" 400 once
  ;;
second)
  # Checkpoints of 43 MiB: their writes take long enough for a signal to land in one.
  ARGS="--model gpt2-tiny --n-layer 2 --n-embd 384 --n-head 4 --seq-len 32 --global-batch-size 4 --steps 30
    --lr 1e-3 --warmup 2 --data $tmp/corpus.txt"
  timeout 300 $MPIRUN -np 2 "$FSDP" train $ARGS --log "$tmp/reference.jsonl" >"$tmp/out" 2>&1 ||
    fail "the uninterrupted job failed"
  CK="--checkpoint-dir $tmp/ck --checkpoint-every 4 --resume auto --log $tmp/run.jsonl"
  for how in "TERM 0 15" "KILL 1 9"; do
    set -- $how
    launch $ARGS $CK
    wait_for_step "$tmp/run.jsonl" $(($(lines "$tmp/run.jsonl") + 6))
    grep -q "^resume: from\|^resume: no complete" "$tmp/out" || fail "the job did not look for a checkpoint"
    signal_rank USR1 0
    # The second signal as soon as a checkpoint's file is being written (its .tmp).
    during="after the checkpoint's write"
    while [ ! -e "$tmp/status" ] && ! past "$start" $STEP_LIMIT; do
      if ls "$tmp"/ck/step-*/*.tmp >/dev/null 2>&1; then during="during a checkpoint's write" && break; fi
    done
    signal_rank "$1" "$2"
    wait_for_end
    case $status in 0 | 75) fail "SIGUSR1, then SIG$1 to rank $2: the job exited $status" ;; esac
    grep -Eq "process rank $2 with PID [0-9]+ on node .+ exited on signal $3 " "$tmp/out" ||
      fail "the output does not say that rank $2 ended on SIG$1"
    echo "SIGUSR1, then SIG$1 to rank $2 $during: the job ended ($status); checkpoints left: $(ls "$tmp/ck" | tr '\n' ' ')"
  done
  timeout 300 $MPIRUN -np 2 "$FSDP" train $ARGS $CK >"$tmp/out" 2>&1 || fail "the last resumed job failed"
  grep '^resume: from' "$tmp/out" || fail "the last job did not resume"
  ! ls "$tmp"/ck/step-*/*.tmp >/dev/null 2>&1 || fail "temporary files left: $(ls "$tmp"/ck/step-*/*.tmp)"
  for d in "$tmp"/ck/step-*; do [ -s "$d/metadata.json" ] || fail "an incomplete checkpoint left: $d"; done
  compare "$tmp/run.jsonl" 30 repeated
  ;;
*) echo "preempt_test.sh: unknown mode '$MODE' (stop or second)"; exit 2 ;;
esac
echo "PASS"
