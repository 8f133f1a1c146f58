#!/bin/sh
# GPU tests that train (ctest labels gpu and gpu_train): `fsdp train --device cuda` on the
# small models, against the CPU, against itself under other flags, against its plan, and
# failing cleanly. One MODE per ctest entry, each seconds on an H100 (2.6 to 25 s there,
# 2026-11-26):
#   parity      gpt2-tiny and llama3-debug in fp32, 10 steps: every step's loss and grad norm
#               within 1e-4 relative of the CPU's (same seed, same batches)
#   bf16        both with --param-dtype bf16 for 60 steps: both dtypes fall below 0.7 x the
#               first loss (on the CPU 5.5 -> 3.4 and 8.1 -> 2.9), and bf16's mean loss over
#               the last 5 steps is within 2% of fp32's (0.07, beside the 2 to 5 learned)
#   outputs     --trace and --memory-snapshot of a cuda run: tools/trace_check.py passes,
#               fsdp memviz draws the snapshot (memviz_snapshot.py check-svg), and the
#               snapshot's peak, replayed from its events, equals the log's
#   staged      2 and 4 ranks sharing the GPU (FSDP_COMM_TRANSPORT=staged), the same global
#               batch: within 1e-5 of 1 rank; each job under --comm-timeout 10 and a 60 s
#               limit, so that a hang fails within a minute
#   variants    per model: the plain run twice gives the same bits (the GPU's kernels are
#               deterministic), and so does --ac full (a recomputed forward is the forward);
#               --batch-size 2 --grad-accum 2 (the same rows, summed in another order) and
#               --offload cpu (AdamW and the norm's sum on the host's arithmetic) within 1e-5
#   plan        `fsdp plan --device cuda --format json` equals step 2's tracked peak of each
#               category and the total (the host's pinned ones too under --offload cpu)
#   error_exit  an error once CUDA, NCCL and the watchdog are up (--log /dev/full fails at
#               step 1's write) ends the job with status 1 and that message alone: no second
#               error, no signal; plain, then under compute-sanitizer memcheck (clean but for
#               NCCL's known probe, tools/sanitizer_check.py); skipped (77) without it
# Skipped (77) only where there is no GPU: nvidia-smi lists none and there is no
# /dev/nvidiaN. Anything else, a CUDA error included, fails.
# GPU_TEST_DEVICE=cpu runs the "cuda" runs on the CPU, leaving out --offload cpu, the staged
# transport and compute-sanitizer: a dry run of the script's runs and checks on a machine
# without a GPU, which proves nothing about the GPU. GPU_TEST_RUN_LIMIT: seconds a run may
# take (default 90).
# Usage: gpu_train_test.sh MODE path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
# shellcheck disable=SC2086 # the unquoted $SHORT, $flags, $MPIRUN... are lists of words
MODE=${1:?usage: gpu_train_test.sh MODE path/to/fsdp PYTHON SOURCE_DIR MPIRUN...}
shift
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=train_test_setup.sh
. "$here/train_test_setup.sh"
MPIRUN="$*"
DEVICE=${GPU_TEST_DEVICE:-cuda}
LIMIT=${GPU_TEST_RUN_LIMIT:-90}
SHORT="--seq-len 64 --steps 10 --lr 1e-3 --warmup 2"

if [ "$DEVICE" = cuda ]; then
  gpu=0
  nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && gpu=1
  for node in /dev/nvidia[0-9]*; do [ -e "$node" ] && gpu=1; done
  [ $gpu = 1 ] || { echo "SKIPPED: no GPU here (nvidia-smi lists none, no /dev/nvidiaN)"; exit 77; }
else
  echo "DRY RUN: the cuda runs on $DEVICE; this checks the script, not the GPU"
fi

failed=0
# fail MESSAGE: the test fails, after its other checks.
fail() {
  echo "FAIL: $*"
  failed=1
}

# run NAME LIMIT CMD...: CMD's output in $tmp/NAME.out; returns its status (124: too slow).
# CMD runs in a session of its own: a process still in it once CMD is done (a rank that a
# timed-out mpirun left behind, a helper that outlived its job) fails the test and is ended,
# so that nothing holds the GPU into the next run.
run() {
  name=$1 limit=$2
  shift 2
  echo "+ $*" | sed "s|$tmp|\$tmp|g; s|$FSDP|fsdp|g"
  setsid -w timeout -k 5 "$limit" "$@" > "$tmp/$name.out" 2>&1 &
  job=$!
  status=0
  wait $job || status=$?
  left=$(ps -eo pid=,sid=,stat= | awk -v s=$job '$2 == s && $3 !~ /^Z/ { print $1 }')
  if [ -n "$left" ]; then
    fail "$name: processes left behind: $(ps -o pid=,args= -p "$(echo $left | tr ' ' ,)" | tr '\n' ';')"
    kill -9 $left 2>/dev/null || :
  fi
  return $status
}

# train NAME FLAGS...: fsdp train on one rank, its log in $tmp/NAME.jsonl; a failure ends
# the test, as every later check would need the log.
train() {
  name=$1
  shift
  if ! run "$name" "$LIMIT" "$FSDP" train --data "$tmp/corpus.txt" --log "$tmp/$name.jsonl" "$@"; then
    tail -n 30 "$tmp/$name.out"
    [ $status -eq 124 ] && echo "FAIL: $name: still running after $LIMIT s" && exit 1
    echo "FAIL: $name: exit status $status"
    exit 1
  fi
}

# same REF RUN RTOL: RUN's losses and grad norms against REF's.
same() {
  echo "$2 against $1:"
  "$PYTHON" "$here/gpu_train_check.py" same "$tmp/$1.jsonl" "$tmp/$2.jsonl" "$3" || failed=1
}

# first_error NAME CMD...: CMD (a job given --log /dev/full) ends with status 1 and one
# error, the log's, and no crash after it.
first_error() {
  name=$1
  shift
  run "$name" "$LIMIT" "$@" || :
  sed "s|$tmp|\$tmp|g" "$tmp/$name.out" | grep -v '^=========  ' | tail -n 15
  [ $status -eq 1 ] || fail "$name: exit status $status, expected 1"
  grep -qF "fsdp: error: --log: cannot write to '/dev/full'" "$tmp/$name.out" ||
    fail "$name: the first error's message is missing"
  errors=$(grep -c 'fsdp: error:' "$tmp/$name.out")
  [ "$errors" -eq 1 ] || fail "$name: $errors error messages, expected the first alone"
  ! grep -qiE 'segmentation fault|received signal|terminated by signal|shutting down|core dumped' \
    "$tmp/$name.out" || fail "$name: a crash or a second failure after the first error"
}

case $MODE in
  parity)
    for model in gpt2-tiny llama3-debug; do
      train "$model-cpu" --device cpu --model "$model" --batch-size 4 $SHORT
      train "$model-gpu" --device "$DEVICE" --model "$model" --batch-size 4 $SHORT
      same "$model-cpu" "$model-gpu" 1e-4
    done ;;
  bf16)
    for model in gpt2-tiny llama3-debug; do
      for dtype in fp32 bf16; do
        train "$model-$dtype" --device "$DEVICE" --model "$model" --batch-size 4 --seq-len 64 --steps 60 \
          --lr 2e-3 --warmup 5 --param-dtype $dtype
      done
      echo "$model:"
      "$PYTHON" "$here/gpu_train_check.py" learns "$tmp/$model-fp32.jsonl" "$tmp/$model-bf16.jsonl" 0.02 ||
        failed=1
    done ;;
  outputs)
    train run --device "$DEVICE" --model gpt2-tiny --batch-size 4 --seq-len 64 --steps 4 \
      --trace "$tmp/trace.json" --memory-snapshot "$tmp/snapshot.json"
    "$PYTHON" "$SRC/tools/trace_check.py" "$tmp/trace.json" --world-size 1 --max-unsharded 2 || failed=1
    if run memviz 60 "$FSDP" memviz "$tmp/snapshot.json" -o "$tmp/snapshot.svg"; then
      "$PYTHON" "$here/memviz_snapshot.py" check-svg "$tmp/snapshot.svg" "$tmp/snapshot.json" || failed=1
    else
      fail "fsdp memviz: $(tail -n 3 "$tmp/memviz.out")"
    fi
    "$PYTHON" "$here/gpu_train_check.py" snapshot "$tmp/snapshot.json" "$tmp/run.jsonl" || failed=1 ;;
  staged)
    for w in 1 2 4; do
      transport=""
      [ $w -gt 1 ] && transport="-x FSDP_COMM_TRANSPORT=staged"
      if ! run "w$w" 60 $MPIRUN $transport -np $w "$FSDP" train --device "$DEVICE" --model gpt2-tiny \
        --global-batch-size 8 $SHORT --comm-timeout 10 --data "$tmp/corpus.txt" --log "$tmp/w$w.jsonl"; then
        tail -n 20 "$tmp/w$w.out"
        # Stopping here saves the minute a hang at W = 2 would cost again at 4.
        [ $status -eq 124 ] && echo "FAIL: W=$w still running after 60 s: --comm-timeout 10 did not end it"
        [ $status -eq 124 ] || echo "FAIL: W=$w: exit status $status"
        exit 1
      fi
      if [ $w -gt 1 ]; then
        [ "$DEVICE" != cuda ] || grep -q "staged transport" "$tmp/w$w.out" ||
          fail "W=$w did not take the staged transport"
        same w1 "w$w" 1e-5
      fi
    done ;;
  variants)
    for model in gpt2-tiny llama3-debug; do
      flags="--device $DEVICE --model $model $SHORT"
      train "$model" $flags --batch-size 4
      train "$model-again" $flags --batch-size 4
      train "$model-ac" $flags --batch-size 4 --ac full
      train "$model-accum" $flags --batch-size 2 --grad-accum 2
      same "$model" "$model-again" 0
      same "$model" "$model-ac" 0
      same "$model" "$model-accum" 1e-5
      if [ "$DEVICE" = cuda ]; then
        train "$model-offload" $flags --batch-size 4 --offload cpu
        same "$model" "$model-offload" 1e-5
      fi
    done ;;
  plan)
    offload=""
    [ "$DEVICE" = cuda ] && offload="--offload cpu"
    n=0
    for config in "gpt2-tiny" "gpt2-tiny --param-dtype bf16 --ac full" \
      "llama3-debug --param-dtype bf16 --grad-accum 2 $offload"; do
      n=$((n + 1))
      common="--device $DEVICE --model $config --batch-size 2 --seq-len 64 --steps 2"
      run "plan$n" 60 "$FSDP" plan --world-size 1 --format json --data "$tmp/corpus.txt" $common || {
        cat "$tmp/plan$n.out"
        fail "fsdp plan $common: exit status $status"
        continue
      }
      train "train$n" $common
      echo "$config:"
      "$PYTHON" "$here/gpu_train_check.py" plan "$tmp/plan$n.out" "$tmp/train$n.jsonl" || failed=1
    done ;;
  error_exit)
    flags="--device $DEVICE --model gpt2-tiny --batch-size 4 --seq-len 64 --steps 5 --data $tmp/corpus.txt"
    first_error plain "$FSDP" train $flags --log /dev/full
    if [ "$DEVICE" = cuda ]; then
      sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
      if [ -z "$sanitizer" ]; then
        [ $failed = 0 ] && { echo "SKIPPED: the plain run passed; compute-sanitizer is not installed"; exit 77; }
      else
        first_error memcheck "$sanitizer" --tool memcheck --print-limit 100 "$FSDP" train $flags --log /dev/full
        verdict=$("$PYTHON" "$SRC/tools/sanitizer_check.py" "$tmp/memcheck.out") || fail "memcheck: $verdict"
        echo "memcheck: $verdict"
      fi
    fi ;;
  *)
    echo "gpu_train_test.sh: unknown mode '$MODE'"
    exit 2 ;;
esac

[ $failed = 0 ] && echo "PASS: $MODE"
exit $failed
