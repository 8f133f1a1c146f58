#!/bin/sh
# The README's Slurm batch script (scripts/slurm-train.sbatch) under a real Slurm: the test
# starts munged, slurmctld and slurmd itself (one node: this machine, its CPUs and memory;
# a munge key, ports, state and logs of its own under a temporary directory; all three
# ended on exit, even on failure), submits the script with test-sized flags, signals the
# batch shell with SIGUSR1 as `--signal=B:USR1@120` would (scancel --signal=USR1 --batch),
# and checks that the job stopped with a checkpoint (75), requeued itself, resumed from the
# checkpoint, completed, and logged, over its two runs, every step once and equal to an
# uninterrupted run's (==). The README must hold the script as it is.
# Skipped (77) when not root or without Slurm and munge (scripts/install-deps.sh installs them).
# Usage: slurm_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
set +e
MPIRUN="$*"
LIMIT=120 # seconds for any one wait: the daemons, a step, the job's end
for p in munged mungekey slurmctld slurmd sbatch scontrol scancel sinfo; do
  command -v "$p" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
  command -v "$p" >/dev/null 2>&1 || { echo "SKIP: no $p (scripts/install-deps.sh installs Slurm and munge)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the Slurm daemons run as root here (SlurmUser=root)"; exit 77; }
# This machine as slurmd sees it (CPUs, sockets, cores, threads, memory): its node line.
node=$(slurmd -C 2>/dev/null | grep '^NodeName=')
cpus=$(echo "$node" | tr ' ' '\n' | sed -n 's/^CPUs=//p')
[ "${cpus:-0}" -ge 2 ] || { echo "SKIP: the job's 2 tasks need 2 CPUs (slurmd -C: $node)"; exit 77; }
fsdp_exe=$(readlink -f "$FSDP") || exit 2

# Every process the test starts from here on (the daemons, slurmstepd, the job's shell,
# mpirun and the ranks) inherits this variable: the cleanup ends exactly those, by PID.
marker="FSDP_SLURM_TEST=$tmp"
export FSDP_SLURM_TEST="$tmp"
cleanup() {
  kill "$budget_pid" 2>/dev/null
  [ -n "${jid:-}" ] && timeout 10 scancel "$jid" 2>/dev/null
  unset FSDP_SLURM_TEST SLURM_CONF
  for pass in 1 2 3 4 5 6 7 8 9 10; do # until none is left (a process may fork meanwhile)
    left=""
    for e in /proc/[0-9]*/environ; do
      p=${e#/proc/}
      p=${p%/environ}
      [ "$p" != $$ ] && grep -qzxF "$marker" "$e" 2>/dev/null && kill -9 "$p" 2>/dev/null && left="$left $p"
    done
    [ -z "$left" ] && break
    sleep 0.5
  done
  wait
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'echo "FAIL: still running after ${BUDGET} s, or interrupted"; exit 2' INT TERM
# The test's own bound, below ctest's TIMEOUT (300 s), so that its cleanup still runs.
BUDGET=270
(
  trap 'kill "$s" 2>/dev/null; exit 0' TERM
  sleep $BUDGET &
  s=$!
  wait "$s" && kill -TERM $$
) &
budget_pid=$!

fail() {
  echo "FAIL: $*"
  for f in job/fsdp-train-*.out log/slurmctld.log log/slurmd.log; do
    [ -e "$tmp/$f" ] || continue
    echo "--- $f ---"
    grep -v '^step ' "$tmp/$f" | tail -n 15
  done
  exit 1
}

now() { date +%s; }
# until_true SECONDS WHAT COMMAND...: polls COMMAND until it succeeds.
until_true() {
  limit=$1 what=$2
  shift 2
  began=$(now)
  until "$@"; do
    [ $(($(now) - began)) -ge "$limit" ] && fail "$what: not after $limit s"
    sleep 0.2
  done
}

# The README's script is the one tested.
"$PYTHON" - "$SRC/README.md" "$SRC/scripts/slurm-train.sbatch" <<'PY' || exit 1
import re, sys
readme, script = open(sys.argv[1]).read(), open(sys.argv[2]).read()
blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", readme, re.S)
assert script in blocks, "README.md does not hold scripts/slurm-train.sbatch as it is"
PY

# The uninterrupted run, while the daemons start.
ARGS="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 --global-batch-size 4 --steps 400
  --lr 2e-3 --warmup 2 --data corpus.txt"
mkdir -p "$tmp/job" "$tmp/ref" "$tmp/munge" "$tmp/key" "$tmp/state" "$tmp/spool" "$tmp/log"
cp "$tmp/corpus.txt" "$tmp/job/" && cp "$tmp/corpus.txt" "$tmp/ref/"
(cd "$tmp/ref" && timeout 300 $MPIRUN -np 2 "$FSDP" train $ARGS --log reference.jsonl >out 2>&1; echo $? >status) &

# munge: a key of the test's own, its own socket (the directories must not be writable by others).
chmod 755 "$tmp" "$tmp/munge" && chmod 700 "$tmp/key"
mungekey -c -k "$tmp/key/munge.key" || fail "mungekey"
munged -F -f --key-file="$tmp/key/munge.key" -S "$tmp/munge/socket" --log-file="$tmp/log/munged.log" \
  --pid-file="$tmp/munge/pid" --seed-file="$tmp/munge/seed" >"$tmp/log/munged.out" 2>&1 &
until_true 10 "munged's socket" test -S "$tmp/munge/socket"

# Two free ports, one node of this machine's CPUs and memory.
ports=$("$PYTHON" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
set -- $ports
host=$(echo "$node" | sed 's/^NodeName=\([^ ]*\).*/\1/')
# cred_expire: also how long a requeued job waits before it may start again (120 s by
# default; a job started sooner is killed, its credential revoked).
cat >"$tmp/slurm.conf" <<EOF
ClusterName=fsdptest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/socket,cred_expire=20
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=10
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
slurmctld -D -i >"$tmp/log/slurmctld.out" 2>&1 &
slurmd -D >"$tmp/log/slurmd.out" 2>&1 &
node_idle() { [ "$(timeout 10 sinfo -h -n "$host" -o %t 2>/dev/null)" = idle ]; }
until_true $LIMIT "node $host idle" node_idle
echo "slurmctld and slurmd up on ports $1 and $2: $node"

until_true 300 "the uninterrupted run" test -e "$tmp/ref/status"
[ "$(cat "$tmp/ref/status")" = 0 ] || { cat "$tmp/ref/out"; fail "the uninterrupted run failed"; }

# What the user's environment would hold: root may run mpirun, one thread a rank.
export FSDP="$fsdp_exe" OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
jid=$(cd "$tmp/job" && timeout 30 sbatch --parsable --time=10 "$SRC/scripts/slurm-train.sbatch" $ARGS \
  --checkpoint-every 100 --log train.jsonl) || fail "sbatch"
echo "submitted job $jid"
field() { timeout 10 scontrol show job "$jid" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p"; }
lines() { if [ -e "$tmp/job/train.jsonl" ]; then wc -l <"$tmp/job/train.jsonl"; else echo 0; fi; }
logged() { [ "$(lines)" -ge "$1" ]; }
until_true $LIMIT "step 50 of job $jid" logged 50
timeout 10 scancel --signal=USR1 --batch "$jid" || fail "scancel --signal=USR1 --batch"
requeued() { [ "$(field Restarts)" = 1 ]; }
until_true $LIMIT "job $jid requeued" requeued
stopped=$(lines)
echo "SIGUSR1 to the batch shell: stopped after step $stopped, requeued ($(field JobState), eligible $(field EligibleTime))"
completed() {
  state=$(field JobState)
  case $state in COMPLETED) return 0 ;; PENDING | RUNNING | COMPLETING | CONFIGURING | REQUEUED) return 1 ;; esac
  fail "job $jid is $state"
}
until_true $LIMIT "job $jid completed" completed
out=$(ls "$tmp"/job/fsdp-train-*.out)
grep -q "^stopped by SIGUSR1 after step $stopped of 400: checkpoint step $stopped is complete" "$out" ||
  fail "the first run did not stop after step $stopped with its checkpoint"
grep -q "^stopped with a checkpoint: requeued" "$out" || fail "the script did not requeue the job"
grep -q "^job $jid, run 2, " "$out" || fail "no second run"
grep -q "^resume: from 'checkpoints/$(printf 'step-%08d' "$stopped")' at step $stopped " "$out" ||
  fail "the second run did not resume from step $stopped"
echo "job $jid: $(field JobState), exit code $(field ExitCode), $(field Restarts) restart: resumed at step $stopped"

"$PYTHON" - "$tmp/ref/reference.jsonl" "$tmp/job/train.jsonl" <<'PY' || fail "the logs differ"
import json, sys
read = lambda path: [json.loads(line) for line in open(path)]
reference, logged = read(sys.argv[1]), read(sys.argv[2])
steps = [r["step"] for r in logged]
assert steps == list(range(1, 401)), f"steps logged: {steps}"
key = lambda r: (r["loss"], r["grad_norm"], r["lr"])
bad = [r["step"] for r in logged if key(r) != key(reference[r["step"] - 1])]
assert not bad, f"steps {bad} differ from the uninterrupted run"
print("steps 1..400 over the two runs, each equal to the uninterrupted run's")
PY
echo "PASS"
