#!/bin/sh
# A shard cut short by another process while `fsdp train` reads it (a cleanup job on
# NFS, a user's truncate) ends the job with a message naming the file, never a signal:
# under --data-io pread and mmap, on 1 and 2 ranks. The run is long; once its log has two
# steps the shard is truncated to 5000 bytes, and the next window past them must end it
# (before the fix, mmap's ranks died of SIGBUS, exit 135, naming nothing). And a shard
# replaced or written over mid-run ends it, at the next window read from it.
# Usage: data_shrinks_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
MPIRUN="$*"
passed=0
failed=0

# 200,000 uint16 tokens, a nanoGPT .bin: 6249 windows of 32 + 1, 78 of them in the first
# 5000 bytes.
"$PYTHON" - "$tmp/corpus.txt" "$tmp/shard.bin" <<'PY'
import sys
ids = open(sys.argv[1], "rb").read()[:200000]
open(sys.argv[2], "wb").write(b"".join(b.to_bytes(2, "little") for b in ids))
PY

# two_steps JOB: waits until the log has two steps (or the job ended, or 2 minutes passed).
two_steps() {
  waited=0
  while [ "$(cat "$tmp/log.jsonl" 2>/dev/null | wc -l)" -lt 2 ] && [ "$waited" -lt 1200 ] && kill -0 "$1" 2>/dev/null; do
    sleep 0.1
    waited=$((waited + 1))
  done
}

# ended_naming JOB NAME TEXT PATTERN: the job ended with an error, its output holding TEXT
# and matching PATTERN (grep -E), and no signal.
ended_naming() {
  rc=0
  wait "$1" || rc=$?
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF -- "$3" "$tmp/out" && grep -qE -- "$4" "$tmp/out" &&
    ! grep -qi "signal" "$tmp/out"; then
    passed=$((passed + 1))
    echo "ok   $2: $(grep -m1 "fsdp: error" "$tmp/out")"
  else
    failed=$((failed + 1))
    echo "FAIL $2: exit $rc; $(grep -m3 -iE "error|signal" "$tmp/out")"
  fi
}

for io in pread mmap; do
  for ranks in 1 2; do
    name="--data-io $io, $ranks rank(s)"
    cp "$tmp/shard.bin" "$tmp/one.bin"
    rm -f "$tmp/log.jsonl"
    timeout 300 $MPIRUN -np "$ranks" "$FSDP" train --model gpt2-tiny --seq-len 32 --batch-size 2 --steps 1000000 \
      --data "$tmp/one.bin" --val-fraction 0 --data-io "$io" --log "$tmp/log.jsonl" >"$tmp/out" 2>&1 &
    job=$!
    two_steps "$job"
    truncate -s 5000 "$tmp/one.bin"
    ended_naming "$job" "$name" "token file '$tmp/one.bin'" "shrank while it was read|changed while the job ran"
  done
done
# A shard written over in place while it is open (one shard: it stays open all the run):
# before, the job trained on the new bytes, the status change time checked only at an open.
for io in pread mmap; do
  cp "$tmp/shard.bin" "$tmp/one.bin"
  rm -f "$tmp/log.jsonl"
  timeout 300 "$FSDP" train --model gpt2-tiny --seq-len 32 --batch-size 2 --steps 1000000 --data "$tmp/one.bin" \
    --val-fraction 0 --data-io "$io" --log "$tmp/log.jsonl" >"$tmp/out" 2>&1 &
  job=$!
  two_steps "$job"
  "$PYTHON" -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(1000); f.write(b"\x41\x00" * 90000)' "$tmp/one.bin"
  ended_naming "$job" "a shard written over while open, --data-io $io" \
    "changed while the job ran: it was written to (or its times set) after the start" "."
done
# A shard replaced by another file of its size (mv over it), or written over in place,
# while the job runs: 8 shards, more than a reader keeps open, so each is opened again as
# the epochs go round, and found another file, or changed since the start (before, the
# job trained on the new bytes, saying nothing).
"$PYTHON" - "$tmp/shard.bin" "$tmp/shards" <<'PY'
import os, sys
ids = open(sys.argv[1], "rb").read()
os.mkdir(sys.argv[2])
for k in range(8):
    open("%s/s%d.bin" % (sys.argv[2], k), "wb").write(ids[k * 10000:(k + 1) * 10000])
open(sys.argv[2] + "/../other.bin", "wb").write(b"\x41\x00" * 5000)
PY
for change in replaced written; do
  rm -f "$tmp/log.jsonl"
  timeout 300 "$FSDP" train --model gpt2-tiny --seq-len 32 --batch-size 2 --steps 1000000 --data "$tmp/shards" \
    --val-fraction 0 --log "$tmp/log.jsonl" >"$tmp/out" 2>&1 &
  job=$!
  two_steps "$job"
  if [ "$change" = replaced ]; then
    cp "$tmp/other.bin" "$tmp/new.bin" && mv "$tmp/new.bin" "$tmp/shards/s3.bin"
    want="another file has its name now"
  else
    # Its modification time set back as it was: the status change time still moves.
    cp -p "$tmp/shards/s5.bin" "$tmp/s5.before" && cp "$tmp/other.bin" "$tmp/shards/s5.bin" &&
      touch -r "$tmp/s5.before" "$tmp/shards/s5.bin"
    want="it was written to (or its times set) after the start"
  fi
  ended_naming "$job" "a shard $change" "changed while the job ran: $want" "."
done
echo "data_shrinks: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
