#!/bin/sh
# Every bad input to `fsdp train` must end the job with a non-zero exit and a
# message that says what is wrong. Usage: cli_errors_test.sh path/to/fsdp MPIRUN...
FSDP=${1:?usage: cli_errors_test.sh path/to/fsdp MPIRUN...}
shift
MPIRUN="$*"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# A run that wrongly succeeds would start training: the limit keeps it short.
limit=""
if command -v timeout >/dev/null 2>&1; then limit="timeout 120"; fi

# expect_error NAME TEXT ARGS...: `fsdp train ARGS` fails and its stderr contains TEXT.
# With RANKS=N set, the job runs on N ranks through mpirun.
expect_error() {
  name=$1 want=$2
  shift 2
  launch=""
  if [ -n "${RANKS:-}" ]; then launch="$MPIRUN -np $RANKS"; fi
  $limit $launch "$FSDP" train "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$tmp/stderr"; then
    passed=$((passed + 1))
    echo "ok   $name"
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $rc, expected '$want' in stderr: $(head -n 3 "$tmp/stderr")"
  fi
}

# Ten tokens 1..10 as little-endian uint16.
tokens() { printf '\001\000\002\000\003\000\004\000\005\000\006\000\007\000\010\000\011\000\012\000'; }
# An llm.c header (256 int32): MAGIC VERSION COUNT given as octal-escaped little-endian words.
llmc_header() { printf "$1$2$3"; head -c 1012 /dev/zero; }
magic='\210\330\064\001'  # 20240520
v1='\001\000\000\000'

: >"$tmp/empty.bin"
printf "$magic$v1" >"$tmp/short.bin"
{ llmc_header "$magic" "$v1" '\013\000\000\000'; tokens; } >"$tmp/count.bin"   # says 11, holds 10
{ llmc_header '\071\060\000\000' "$v1" '\012\000\000\000'; tokens; } >"$tmp/magic.bin"  # magic 12345
printf '\001\000\002' >"$tmp/odd.bin"
printf 'ab\310c' >"$tmp/wide.txt"  # byte 200
tokens >"$tmp/small.bin"

expect_error "missing data file" "$tmp/missing.bin" --data "$tmp/missing.bin"
expect_error "data is required" "--data is required" --steps 1
expect_error "empty file" "is empty" --data "$tmp/empty.bin"
expect_error "short llm.c file" "too short" --data "$tmp/short.bin"
expect_error "llm.c count mismatch" "header says 11 tokens" --data "$tmp/count.bin"
expect_error "wrong llm.c magic" "magic 12345" --data "$tmp/magic.bin" --data-format llmc
expect_error "odd nanoGPT size" "odd size" --data "$tmp/odd.bin"
expect_error "token beyond vocab" "token id 200 at position 2" --data "$tmp/wide.txt" --vocab-size 100
expect_error "too little data" "too little data" --data "$tmp/small.bin" --vocab-size 256 --seq-len 32 \
  --val-fraction 0
expect_error "unknown flag" "unknown flag '--foo'" --data "$tmp/small.bin" --foo 1
expect_error "positional argument" "unexpected argument 'extra'" --data "$tmp/small.bin" extra
expect_error "malformed --lr" "--lr: 'abc' is not a number" --data "$tmp/small.bin" --lr abc
expect_error "non-finite --lr" "--lr: must be a finite number" --data "$tmp/small.bin" --lr nan
expect_error "malformed --steps" "--steps: '1x' is not an integer" --data "$tmp/small.bin" --steps 1x
expect_error "overflowing --steps" "--steps: '99999999999' is out of range" --data "$tmp/small.bin" \
  --steps 99999999999
expect_error "zero --steps" "--steps: must be a positive integer, got '0'" --data "$tmp/small.bin" --steps 0
expect_error "zero --steps=" "--steps: must be a positive integer, got '0'" --data "$tmp/small.bin" --steps=0
expect_error "negative --seed" "--seed: must be a non-negative integer" --data "$tmp/small.bin" --seed -1
expect_error "--beta2 out of [0, 1)" "--beta2: must be in [0, 1)" --data "$tmp/small.bin" --beta2 1
expect_error "missing value at the end" "--batch-size: missing value" --data "$tmp/small.bin" --batch-size
expect_error "missing value before a flag" "--lr: missing value" --lr --data "$tmp/small.bin"
expect_error "unknown --model" "--model: unknown model 'gpt5'" --data "$tmp/small.bin" --model gpt5
expect_error "unknown --sharding" "--sharding: unknown strategy 'zero9'" --data "$tmp/small.bin" --sharding zero9
expect_error "unknown --data-format" "--data-format: unknown format 'csv'" --data "$tmp/small.bin" \
  --data-format csv
expect_error "--seq-len beyond the model" "--seq-len: 100000 exceeds" --data "$tmp/small.bin" --seq-len 100000
expect_error "activations beyond the kernels' sizes" "lower --batch-size or --seq-len" --data "$tmp/small.bin" \
  --n-embd 4096 --n-head 32 --batch-size 100000 --seq-len 256
expect_error "unwritable --log" "--log: cannot open '$tmp/no/such/dir/log.jsonl'" --data "$tmp/small.bin" \
  --model gpt2-tiny --vocab-size 256 --seq-len 4 --val-fraction 0 --log "$tmp/no/such/dir/log.jsonl"
expect_error "unknown --backward-prefetch" "--backward-prefetch: unknown mode 'early'" --data "$tmp/small.bin" \
  --backward-prefetch early
expect_error "negative --prefetch" "--prefetch: must be a non-negative integer" --data "$tmp/small.bin" --prefetch -1
expect_error "zero --max-unsharded" "--max-unsharded: must be a positive integer" --data "$tmp/small.bin" \
  --max-unsharded 0
expect_error "bad --overlap" "--overlap: must be on or off, got 'maybe'" --data "$tmp/small.bin" --overlap maybe
expect_error "--trace-steps without a colon" "--trace-steps: expected FIRST:LAST" --data "$tmp/small.bin" \
  --trace-steps 3
expect_error "--trace-steps backwards" "--trace-steps: the last step 1 comes before the first 3" \
  --data "$tmp/small.bin" --trace-steps 3:1
expect_error "--trace-steps past --steps" "--trace-steps: step 9 is past the last step 5" --data "$tmp/small.bin" \
  --steps 5 --trace-steps 2:9
expect_error "unwritable --trace" "--trace: cannot open '$tmp/no/such/dir/t.json.tmp' for writing" \
  --data "$tmp/small.bin" --model gpt2-tiny --vocab-size 256 --seq-len 4 --val-fraction 0 \
  --trace "$tmp/no/such/dir/t.json"
RANKS=2 expect_error "world size does not divide the batch" \
  "--global-batch-size 5 is not divisible by the world size 2" --data "$tmp/small.bin" --global-batch-size 5

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
