#!/bin/sh
# A rank killed with SIGKILL in a run that writes a checkpoint after every step (so the
# kill lands in a step, in a background write or before a metadata write) ends the job
# within a bounded time, naming the rank; --resume auto then continues from the newest
# complete checkpoint, and every step it logs equals the uninterrupted run's (==).
# Usage: checkpoint_kill_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
set +e
START_LIMIT=60 # seconds for the job to complete its first checkpoints
EXIT_LIMIT=30  # seconds for the job to end once rank 1 is dead
fsdp_exe=$(readlink -f "$FSDP") || exit 2
. "$(dirname "$0")/job_processes.sh"
ranks=""

cleanup() {
  if [ -s "$tmp/mpirun.pid" ] && [ ! -e "$tmp/status" ]; then
    launcher=$(cat "$tmp/mpirun.pid")
    for p in $ranks $(descendants "$launcher"); do is_rank "$p" && kill -9 "$p" 2>/dev/null; done
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
  tail -n 20 "$tmp/out" 2>/dev/null
  exit 1
}

# The job's flags but --log and the checkpoint flags (paths have no spaces: mktemp's).
ARGS="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 --global-batch-size 4 --steps 80
  --lr 2e-3 --warmup 2 --data $tmp/corpus.txt"

# The subshell records the launcher's PID (sh -c execs it) and, once it ends, its status.
(
  sh -c 'echo $$ >"$0"; exec "$@"' "$tmp/mpirun.pid" "$@" -np 2 "$FSDP" train $ARGS --log "$tmp/killed.jsonl" \
    --checkpoint-dir "$tmp/ck" --checkpoint-every 1 --keep-last 3 >"$tmp/out" 2>&1
  echo $? >"$tmp/status"
) &

start=$(now)
until grep -q '^checkpoint step 3 complete' "$tmp/out" 2>/dev/null; do
  [ -e "$tmp/status" ] && fail "the job ended (status $(cat "$tmp/status")) before its third checkpoint"
  past "$start" $START_LIMIT && fail "no third checkpoint after ${START_LIMIT} s"
  sleep 0.1
done
mpirun_pid=$(cat "$tmp/mpirun.pid")
find_ranks "$mpirun_pid" 1
[ -n "$victim" ] || fail "no process of the job has OMPI_COMM_WORLD_RANK=1"
kill -9 "$victim"
killed=$(now)
echo "killed rank 1 after step $(grep '^step ' "$tmp/out" | tail -n 1 | awk '{ print $2 }')"
until [ -e "$tmp/status" ]; do
  past "$killed" $EXIT_LIMIT && fail "the job was still running ${EXIT_LIMIT} s after rank 1 died"
  sleep 0.2
done
took=$(elapsed "$killed")
wait
[ "$(cat "$tmp/status")" -ne 0 ] || fail "the job exited 0 after rank 1 was killed"
grep -Eq 'process rank 1 with PID [0-9]+ on node .+ exited on signal 9' "$tmp/out" ||
  fail "the output does not say that rank 1 exited on signal 9"
left=""
for p in $ranks; do is_rank "$p" && left="$left $p"; done
[ -z "$left" ] || fail "rank processes still running after the job ended:$left"
echo "the job ended ${took} s after rank 1 was killed; checkpoints left: $(ls "$tmp/ck" | tr '\n' ' ')"

timeout 300 "$@" -np 2 "$FSDP" train $ARGS --log "$tmp/resumed.jsonl" --checkpoint-dir "$tmp/ck" --resume auto \
  >"$tmp/out" 2>&1 || fail "the resumed job failed"
grep '^resume: from' "$tmp/out" || fail "the resumed job did not resume"
timeout 300 "$@" -np 2 "$FSDP" train $ARGS --log "$tmp/reference.jsonl" >"$tmp/out" 2>&1 || fail "the uninterrupted job failed"

"$PYTHON" - "$tmp" <<'PY'
import json, os, sys
tmp = sys.argv[1]
read = lambda name: [json.loads(line) for line in open(os.path.join(tmp, name))]
reference, resumed = read("reference.jsonl"), read("resumed.jsonl")
first = resumed[0]["step"]
steps = [r["step"] for r in resumed]
assert steps == list(range(first, 81)) and first >= 4, f"resumed steps {steps[:5]}..."
same = lambda r, ref: (r["loss"], r["grad_norm"], r["lr"]) == (ref["loss"], ref["grad_norm"], ref["lr"])
bad = [r["step"] for r in resumed if not same(r, reference[r["step"] - 1])]
assert not bad, f"steps {bad} differ from the uninterrupted run"
print(f"resumed at step {first - 1}: steps {first}..80 equal the uninterrupted run")
PY
[ $? -eq 0 ] || exit 1
echo "PASS"
