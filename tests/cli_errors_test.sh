#!/bin/sh
# Every bad input to `fsdp train` must end the job with a non-zero exit and a
# message that says what is wrong, and --help must list exactly the flags the
# parser takes. Usage: cli_errors_test.sh path/to/fsdp MPIRUN...
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
# With RANKS=N set, the job runs on N ranks through mpirun; with COMMAND=plan, it is
# `fsdp plan ARGS`.
expect_error() {
  name=$1 want=$2
  shift 2
  launch=""
  if [ -n "${RANKS:-}" ]; then launch="$MPIRUN -np $RANKS"; fi
  $limit $launch "$FSDP" "${COMMAND:-train}" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
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
# Ids are checked as a batch reads its windows: the file, the byte offset, the id.
expect_error "token beyond vocab" "token file '$tmp/wide.txt': token id 200 at byte offset 2 is outside the vocabulary (vocab size 100)" \
  --data "$tmp/wide.txt" --vocab-size 100 --seq-len 2 --val-fraction 0
expect_error "too little data" "too little data" --data "$tmp/small.bin" --vocab-size 256 --seq-len 32 \
  --val-fraction 0
expect_error "--data twice" "--data is given twice ('$tmp/small.bin', then '$tmp/odd.bin'): give several files" \
  --data "$tmp/small.bin" --data "$tmp/odd.bin"
expect_error "a glob matching nothing" "--data: '$tmp/none_*.bin' matches no file" --data "$tmp/none_*.bin"
expect_error "shards of two widths" "holds 1-byte tokens (text), but '$tmp/small.bin' holds 2-byte ones" \
  --data "$tmp/small.bin,$tmp/wide.txt"
expect_error "a bad shard among good ones" "token file '$tmp/count.bin': the llm.c header says 11 tokens" \
  --data "$tmp/small.bin,$tmp/count.bin"
# Flags another flag made void, silently (the hostile-user pass of 2026-12-07).
expect_error "--batch-size beside --global-batch-size" "--batch-size 2 and --global-batch-size 12: give one" \
  --data "$tmp/small.bin" --batch-size 2 --global-batch-size 12
expect_error "--val-every without validation" "--val-every 1: there is no validation data" \
  --data "$tmp/small.bin" --val-every 1 --val-fraction 0
expect_error "a fraction that reads as 0" "--val-fraction: '1e-300' is too small for fp32" \
  --data "$tmp/small.bin" --val-fraction 1e-300
expect_error "--val-data and --val-fraction" "--val-fraction 0.2 and --val-data: validation comes from one of them" \
  --data "$tmp/small.bin" --val-data "$tmp/small.bin" --val-fraction 0.2
expect_error "a bad --val-data" "token file '$tmp/odd.bin' has an odd size" --data "$tmp/small.bin" \
  --val-data "$tmp/odd.bin" --seq-len 2
expect_error "unknown --data-io" "--data-io: unknown way 'aio' (known: pread, mmap)" --data "$tmp/small.bin" \
  --data-io aio
expect_error "unknown --data-changed" "--data-changed: unknown choice 'yes' (known: refuse, accept)" \
  --data "$tmp/small.bin" --data-changed yes
expect_error "too few validation windows" "--val-batches 4: 4 global batches of 8 windows need 32 windows" \
  --data "$tmp/small.bin" --val-data "$tmp/small.bin" --seq-len 2 --val-every 1
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
expect_error "bad --overlap" "--overlap: unknown value 'maybe' (known: on, off)" --data "$tmp/small.bin" --overlap maybe
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
# Ranks started with other flags (mpirun's A : B form): another --n-layer corrupted the
# heap in the collectives, another --lr trained apart silently.
for other in "--n-layer 3" "--lr 1e-3"; do
  set -- train --data "$tmp/small.bin" --model gpt2-tiny --vocab-size 256 --seq-len 4 --val-fraction 0 --steps 2
  $limit $MPIRUN -np 1 "$FSDP" "$@" : -np 1 "$FSDP" "$@" $other >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  want="rank 1: started with another command line than rank 0's: after '--steps 2', '${other%% *}' here, the end there"
  if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$tmp/stderr" && ! grep -qiE "signal|corrupt" "$tmp/stderr"; then
    passed=$((passed + 1))
    echo "ok   a rank started with $other"
  else
    failed=$((failed + 1))
    echo "FAIL a rank started with $other: exit $rc: $(grep -m3 -iE "error|signal" "$tmp/stderr")"
  fi
done

expect_error "unknown param dtype" "--param-dtype: unknown dtype 'fp8' (known: fp32, bf16, fp16)" \
  --data "$tmp/small.bin" --param-dtype fp8
expect_error "fp16 reduce dtype" "--reduce-dtype: unknown dtype 'fp16' (known: fp32, bf16)" \
  --data "$tmp/small.bin" --reduce-dtype fp16
expect_error "unknown --wrap" "--wrap: expected block, none or size:N, got 'layer'" --data "$tmp/small.bin" \
  --wrap layer
expect_error "--wrap size:0" "--wrap: 'size:0' is not size:N" --data "$tmp/small.bin" --wrap size:0
expect_error "--wrap size with a bad unit" "--wrap: 'size:5X' is not size:N" --data "$tmp/small.bin" --wrap size:5X
expect_error "unknown --reshard-after-forward" "--reshard-after-forward: unknown value 'yes' (known: auto, true, false)" \
  --data "$tmp/small.bin" --reshard-after-forward yes
expect_error "--reshard-after-forward under grad-op" "--reshard-after-forward: only for --sharding full" \
  --data "$tmp/small.bin" --sharding grad-op --reshard-after-forward true
expect_error "checkpointing every 0 blocks" "--ac: every:K needs K >= 1" --data "$tmp/small.bin" --ac every:0
expect_error "checkpointing past the last block" "--ac every:3: the model has 2 blocks, so none would be checkpointed" \
  --data "$tmp/small.bin" --model gpt2-tiny --n-layer 2 --ac every:3
# 0 was taken as not given: the default batch ran.
expect_error "--global-batch-size 0" "--global-batch-size: must be a positive integer, got '0'" \
  --data "$tmp/small.bin" --global-batch-size 0
# A step whose gradients are not finite ends the run (it went on logging NaN, exit 0).
expect_error "training diverged" "training diverged, and the parameters are no longer finite" \
  --data "$tmp/small.bin" --model gpt2-tiny --vocab-size 256 --seq-len 4 --val-fraction 0 --lr 1e30 --warmup 0 --steps 4
# libgomp crashed making 100000 threads.
OMP_NUM_THREADS=100000 expect_error "absurd OMP_NUM_THREADS" "OMP_NUM_THREADS=100000: more than 16 threads for each" \
  --data "$tmp/small.bin"
expect_error "unknown checkpointing" "--ac: expected none, full or every:K, got 'some'" --data "$tmp/small.bin" \
  --ac some
expect_error "checkpointing every K not a number" "--ac: 'every:two' is not every:K with an integer K" --data "$tmp/small.bin" \
  --ac every:two
expect_error "unknown accumulation mode" "--accum-mode: unknown mode 'later' (known: sharded, no-sync)" \
  --data "$tmp/small.bin" --accum-mode later
expect_error "zero micro-batches" "--grad-accum: must be a positive integer, got '0'" --data "$tmp/small.bin" \
  --grad-accum 0
expect_error "loss scale without fp16" "--loss-scale: only for --param-dtype fp16" --data "$tmp/small.bin" \
  --param-dtype bf16 --loss-scale 1024
expect_error "bf16 all-reduce" "--reduce-dtype bf16: not supported with --sharding none" --data "$tmp/small.bin" \
  --sharding none --reduce-dtype bf16
expect_error "offload on the cpu" "--offload cpu: only with --device cuda" --data "$tmp/small.bin" --offload cpu
expect_error "unknown offload" "--offload: unknown offload 'gpu' (known: none, cpu)" --data "$tmp/small.bin" \
  --offload gpu
expect_error "snapshot into a directory" "--memory-snapshot: '$tmp' is a directory" --data "$tmp/small.bin" \
  --memory-snapshot "$tmp"
expect_error "snapshot steps past the end" "--snapshot-steps: step 9 is past the last step 3 (--steps)" \
  --data "$tmp/small.bin" --steps 3 --snapshot-steps 2:9
expect_error "world size is for plan" "unknown flag '--world-size' (see fsdp train --help)" \
  --data "$tmp/small.bin" --world-size 2
RANKS=2 expect_error "accumulation does not divide the batch" \
  "--global-batch-size 6 is not divisible by the world size 2 times --grad-accum 2" --data "$tmp/small.bin" \
  --global-batch-size 6 --grad-accum 2
COMMAND=plan expect_error "plan without world size" "--world-size is required" --model gpt2
COMMAND=plan expect_error "plan world size zero" "--world-size: must be a positive integer, got '0'" \
  --world-size 0
COMMAND=plan expect_error "plan offload on the cpu" "--offload cpu: only with --device cuda" --world-size 2 \
  --offload cpu
COMMAND=plan expect_error "plan format" "--format: unknown format 'xml' (known: text, json)" --world-size 2 --format xml
COMMAND=plan expect_error "plan unknown --cuda-arch" \
  "--cuda-arch: unknown GPU arch 'sm_75' (known: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)" --world-size 1 \
  --device cuda --cuda-arch sm_75
COMMAND=plan expect_error "plan --cuda-arch as a number" "--cuda-arch: unknown GPU arch '86'" --world-size 1 \
  --device cuda --cuda-arch 86
COMMAND=plan expect_error "plan --cuda-arch on the cpu" "--cuda-arch sm_86: only with --device cuda" --world-size 1 \
  --cuda-arch sm_86
COMMAND=plan expect_error "plan --gpu on the cpu" "--gpu h100-sxm: only with --device cuda" --world-size 2 \
  --gpu h100-sxm
COMMAND=plan expect_error "plan link preset" "--link intra=nvlink9: unknown link 'nvlink9' (known: nvlink3," \
  --world-size 2 --link intra=nvlink9
COMMAND=plan expect_error "plan link without a unit" "--link: '900' has no unit (a rate such as" --world-size 2 \
  --link intra=900
COMMAND=plan expect_error "plan link unit" "--link: '900GB': unknown unit 'GB' (a rate such as" --world-size 2 \
  --link inter=900GB
COMMAND=plan expect_error "plan link latency unit" "--link: '2' has no unit (a latency such as" --world-size 2 \
  --link inter=50GB/s,2
COMMAND=plan expect_error "plan link side" "--link nvlink4: say which link: intra=... (within a machine) or" \
  --world-size 2 --link nvlink4
COMMAND=plan expect_error "plan negative link" "--link: '-5GB/s' must be positive and finite" --world-size 2 \
  --link intra=-5GB/s
COMMAND=plan expect_error "plan infinite link" "--link: '1e400GB/s' must be positive and finite" --world-size 2 \
  --link inter=1e400GB/s
COMMAND=plan expect_error "plan efficiency range" "--efficiency matmul=1.5: matmul=1.5 must be a fraction in [0.001, 1]" \
  --world-size 2 --efficiency matmul=1.5
COMMAND=plan expect_error "plan preset with a latency" "--link inter=ethernet-25g,5us: a preset comes with its latency" \
  --world-size 4 --ranks-per-node 2 --link inter=ethernet-25g,5us
COMMAND=plan expect_error "plan link twice" "--link intra=1GB/s and --link intra=2GB/s: one link given twice" \
  --world-size 2 --link intra=1GB/s --link intra=2GB/s
COMMAND=plan expect_error "plan vocab past an int padded" "--vocab-size 2147483647 is too large: at most 2147483520" \
  --world-size 2 --model gpt2-tiny --vocab-size 2147483647
COMMAND=plan expect_error "plan grad-accum bound" "--grad-accum 2147483647: at most 65536 micro-batches a step" \
  --world-size 2 --grad-accum 2147483647
COMMAND=plan expect_error "plan sweep global batch" "--global-batch-size: not with --sweep" --sweep 1,2 \
  --global-batch-size 64
COMMAND=plan expect_error "plan efficiency class" "--efficiency tensor=0.5: unknown op class 'tensor'" \
  --world-size 2 --efficiency tensor=0.5
COMMAND=plan expect_error "plan calibrate missing" "--calibrate log '$tmp/none.jsonl': " --world-size 2 \
  --calibrate "$tmp/none.jsonl"
printf '{"step":3,"step_ms":10}\n' > "$tmp/old.jsonl"
COMMAND=plan expect_error "plan calibrate old log" "--calibrate '$tmp/old.jsonl': line 1 has no world_size" \
  --world-size 2 --calibrate "$tmp/old.jsonl"
printf '{"step":1,"world_size":2,"step_ms":10}\n' > "$tmp/short.jsonl"
COMMAND=plan expect_error "plan calibrate short log" "no step after the first two to calibrate on" \
  --world-size 2 --calibrate "$tmp/short.jsonl"
printf 'step 3\n' > "$tmp/text.jsonl"
COMMAND=plan expect_error "plan calibrate text" "line 1 is not a JSON object" --world-size 2 --calibrate "$tmp/text.jsonl"
printf '{"step":3}\n\000{"step":4}\n' > "$tmp/nul.jsonl"
COMMAND=plan expect_error "plan calibrate NUL" "--calibrate '$tmp/nul.jsonl': a NUL byte at offset 11" --world-size 2 \
  --calibrate "$tmp/nul.jsonl"
# Counts an int cannot hold were cast to one: undefined behaviour (tests/fuzz: train_log).
printf '{"step":3,"world_size":1e10}\n' > "$tmp/ranks.jsonl"
COMMAND=plan expect_error "plan calibrate world size past an int" \
  "--calibrate '$tmp/ranks.jsonl': line 1's world_size 1e+10 is not a whole number up to 2147483647" \
  --world-size 2 --calibrate "$tmp/ranks.jsonl"
printf '{"step":3,"world_size":2,"step_ms":1,"tokens_per_s":1,"gflops":1,"threads_per_rank":1e10}\n' \
  > "$tmp/threads.jsonl"
COMMAND=plan expect_error "plan calibrate threads past an int" \
  "line 1's threads_per_rank 1e+10 is not a whole number up to 2147483647" --world-size 2 --calibrate "$tmp/threads.jsonl"
COMMAND=plan expect_error "plan mesh does not divide" "--mesh 3,2: 3 x 2 = 6 ranks, but the job has 8" \
  --world-size 8 --mesh 3,2
COMMAND=plan expect_error "plan sweep order" "--sweep 8:4: 8 is above 4" --sweep 8:4
COMMAND=plan expect_error "plan sweep value" "--sweep: 'x' is not an integer" --sweep 8,x
COMMAND=plan expect_error "plan sweep and a world size" "--world-size: not with --sweep" --sweep 1:4 --world-size 2
COMMAND=plan expect_error "plan sweep and a mesh" "--mesh: not with --sweep" --sweep 4:8 --mesh 2,2
COMMAND=plan expect_error "plan sweep picture alone" "--sweep-svg: only with --sweep" --world-size 2 \
  --sweep-svg "$tmp/p.svg"
expect_error "--cuda-arch is for plan" "unknown flag '--cuda-arch' (see fsdp train --help)" \
  --data "$tmp/small.bin" --cuda-arch sm_86
expect_error "zero --comm-timeout" "--comm-timeout: must be positive, got '0'" --data "$tmp/small.bin" --comm-timeout 0
expect_error "--comm-timeout under a second" "--comm-timeout 0.001: at least 1 second" --data "$tmp/small.bin" \
  --comm-timeout 0.001
expect_error "malformed --mesh" "--mesh: expected R,S" --data "$tmp/small.bin" --mesh 2
expect_error "zero in --mesh" "--mesh: must be a positive integer, got '0'" --data "$tmp/small.bin" --mesh 0,1
expect_error "--mesh with DDP" "--mesh 2,1: --sharding none replicates over every rank already" \
  --data "$tmp/small.bin" --mesh 2,1 --sharding none
RANKS=2 expect_error "--mesh not the world size" "--mesh 2,2: 2 x 2 = 4 ranks, but the job has 2" \
  --data "$tmp/small.bin" --vocab-size 256 --seq-len 4 --mesh 2,2
COMMAND=plan expect_error "plan --mesh not the world size" "--mesh 3,1: 3 x 1 = 3 ranks, but the job has 2" \
  --world-size 2 --mesh 3,1
COMMAND=plan expect_error "plan --ranks-per-node" "--ranks-per-node 3 does not divide --world-size 4" \
  --world-size 4 --ranks-per-node 3
COMMAND=plan expect_error "plan batch too large" "lower --batch-size or --seq-len" --world-size 2 --model gpt2 \
  --batch-size 100000 --seq-len 1024
# Llama's shape flags on GPT-2 (sample's KV cache broke on them, train and plan ignored them).
COMMAND=sample expect_error "gpt2 kv heads" "--n-kv-head: Llama 3 only; --model gpt2-tiny is GPT-2" \
  --model gpt2-tiny --n-kv-head 2 --prompt-tokens 0 --max-new-tokens 3
COMMAND=plan expect_error "gpt2 ffn" "--ffn-hidden: Llama 3 only; --model gpt2 is GPT-2" --world-size 2 --model gpt2 \
  --ffn-hidden 100
COMMAND=plan expect_error "llama kv heads" "model 'llama3-8b': --n-head 32 is not divisible by --n-kv-head 5" \
  --world-size 2 --model llama3-8b --n-kv-head 5
COMMAND=plan expect_error "llama odd head dimension" "--n-embd 4064 / --n-head 32 is an odd head dimension" \
  --world-size 2 --model llama3-8b --n-embd 4064
COMMAND=plan expect_error "llama batch too large" "at --ffn-hidden 14336 makes activations" --world-size 2 \
  --model llama3-8b --batch-size 100 --seq-len 8192
expect_error "unknown --device" "--device: unknown device 'tpu' (known: cpu, cuda)" --data "$tmp/small.bin" \
  --device tpu
expect_error "empty --device" "--device: the value is empty" --data "$tmp/small.bin" --device=
# Where there is no GPU (or no CUDA in the build), the cuda device says so before anything runs.
if ! nvidia-smi -L >/dev/null 2>&1; then
  expect_error "--device cuda without a GPU" "fsdp: error: --device cuda: " --data "$tmp/small.bin" --device cuda
fi
COMMAND=plan expect_error "plan unknown --device" "--device: unknown device 'CUDA' (known: cpu, cuda)" \
  --world-size 2 --device=CUDA

# --help and the parser come from one table; this keeps them so. Each flag name that
# either command's --help shows or the parser's source quotes (the table's rows among
# them) goes to COMMAND without a value: the parser takes it ("missing value") or refuses
# it ("unknown flag"), and COMMAND's --help must list it exactly when it is taken.
args_source="$(dirname "$0")/../src/cli/args.c"
flag_names=$({ "$FSDP" train --help; "$FSDP" plan --help; grep -o '"--[a-z][a-z0-9-]*' "$args_source"; } |
  grep -o -- '--[a-z][a-z0-9-]*' | grep -vx -- '--help' | sort -u)
expect_help_lists_taken_flags() {
  command=$1
  problems="" taken=0
  [ -f "$args_source" ] || problems=" no $args_source"
  "$FSDP" "$command" --help >"$tmp/help" 2>&1 || problems="$problems --help failed"
  for flag in $flag_names; do
    $limit "$FSDP" "$command" "$flag" >/dev/null 2>"$tmp/stderr"
    if grep -qF -- "$flag: missing value" "$tmp/stderr"; then
      is_taken=yes taken=$((taken + 1))
    elif grep -qF -- "unknown flag '$flag'" "$tmp/stderr"; then
      is_taken=no
    else
      problems="$problems $flag: neither taken nor refused ($(head -n 1 "$tmp/stderr"));"
      continue
    fi
    if grep -qE -- "^  $flag( |\$)" "$tmp/help"; then is_listed=yes; else is_listed=no; fi
    [ "$is_taken" = "$is_listed" ] || problems="$problems $flag: taken $is_taken, listed $is_listed;"
  done
  [ "$taken" -gt 0 ] || problems="$problems no flag taken at all"
  if [ -z "$problems" ]; then
    passed=$((passed + 1))
    echo "ok   $command --help lists exactly the $taken flags $command takes"
  else
    failed=$((failed + 1))
    echo "FAIL $command --help and parser disagree:$problems"
  fi
}
expect_help_lists_taken_flags train
expect_help_lists_taken_flags plan

# expect_memviz_error NAME STATUS TEXT ARGS...: `fsdp memviz ARGS` exits with STATUS (2: a
# usage error, 1: a bad snapshot), its stderr contains TEXT, and it writes no output.
expect_memviz_error() {
  name=$1 status=$2 want=$3
  shift 3
  rm -f "$tmp/out.html" "$tmp/out.html.tmp"
  "$FSDP" memviz "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  if [ "$rc" -eq "$status" ] && grep -qF -- "$want" "$tmp/stderr" && [ ! -e "$tmp/out.html" ] &&
    [ ! -e "$tmp/out.html.tmp" ]; then
    passed=$((passed + 1))
    echo "ok   memviz: $name"
  else
    failed=$((failed + 1))
    echo "FAIL memviz: $name: exit $rc (expected $status), expected '$want' in stderr: $(head -n 3 "$tmp/stderr")"
  fi
}

# memory_snapshot EVENT...: a one-rank snapshot of step 2 with these events.
memory_snapshot() {
  events=$(printf '%s,' "$@")
  cat <<EOF
{"format": "fsdp-memory-snapshot", "version": 1, "world_size": 1, "steps": [2],
 "categories": ["sharded_params", "unsharded_params", "sharded_grads", "unsharded_grads",
                "optimizer", "activations", "comm", "other"],
 "ranks": [{"rank": 0,
   "start": {"sharded_params": 1024, "unsharded_params": 0, "sharded_grads": 0, "unsharded_grads": 0,
             "optimizer": 0, "activations": 0, "comm": 0, "other": 0},
   "events": [${events%,}]}]}
EOF
}
alloc='{"time_us": 10.5, "bytes": 4096, "category": "activations", "unit": "block 0", "op": "forward", "step": 2}'
free='{"time_us": 12.0, "bytes": -4096, "category": "activations", "unit": "block 0", "op": "backward", "step": 2}'
memory_snapshot "$alloc" "$free" >"$tmp/good.json"
memory_snapshot "$alloc" "$free" | sed 's/"version": 1,/"version": 1/' >"$tmp/syntax.json"
memory_snapshot "$alloc" "$free" | sed 's/fsdp-memory-snapshot/chrome-trace/' >"$tmp/format.json"
memory_snapshot "$alloc" "$free" | sed 's/"version": 1/"version": 2/' >"$tmp/version.json"
memory_snapshot "$alloc" "$(echo "$free" | sed 's/, "op": "backward"//')" >"$tmp/no_op.json"
memory_snapshot "$alloc" "$(echo "$free" | sed 's/"bytes": -4096/"bytes": "-4096"/')" >"$tmp/string_bytes.json"
memory_snapshot "$alloc" "$(echo "$free" | sed 's/activations/kv_cache/')" >"$tmp/category.json"
memory_snapshot "$alloc" "$(echo "$free" | sed 's/-4096/-1152921504606846976/')" >"$tmp/huge_bytes.json"
memory_snapshot "$alloc" "$(echo "$free" | sed 's/-4096/-8192/')" >"$tmp/negative.json"
memory_snapshot "$alloc" "$(echo "$free" | sed 's/12.0/9.5/')" >"$tmp/backwards.json"
memory_snapshot "$alloc" "$free" | sed 's/"other": 0}/"other": 0, "kv_cache": 0}/' >"$tmp/start_category.json"
memory_snapshot "$alloc" "$free" | sed 's/, "comm": 0//' >"$tmp/start_missing.json"
memory_snapshot | sed 's/"ranks": \[.*/"ranks": []}/; /"start"/,$d' >"$tmp/no_ranks.json"

expect_memviz_error "malformed JSON" 1 "$tmp/syntax.json: not valid JSON: syntax error at line 1" \
  "$tmp/syntax.json" -o "$tmp/out.html"
expect_memviz_error "wrong format" 1 "$tmp/format.json: \"format\" is \"chrome-trace\"" \
  "$tmp/format.json" -o "$tmp/out.html"
expect_memviz_error "unsupported version" 1 "$tmp/version.json: unsupported \"version\" 2" \
  "$tmp/version.json" -o "$tmp/out.html"
expect_memviz_error "missing field" 1 "$tmp/no_op.json: rank 0: events[1]: missing \"op\"" \
  "$tmp/no_op.json" -o "$tmp/out.html"
expect_memviz_error "mistyped field" 1 "$tmp/string_bytes.json: rank 0: events[1]: \"bytes\" must be an integer" \
  "$tmp/string_bytes.json" -o "$tmp/out.html"
expect_memviz_error "an integer past 2^53" 1 "$tmp/huge_bytes.json: rank 0: events[1]: \"bytes\" is -1.15292150460685e+18, beyond 2^53" \
  "$tmp/huge_bytes.json" -o "$tmp/out.html"
expect_memviz_error "unknown category" 1 "$tmp/category.json: rank 0: events[1]: unknown category \"kv_cache\"" \
  "$tmp/category.json" -o "$tmp/out.html"
expect_memviz_error "unknown category in start" 1 "rank 0: \"start\": unknown category \"kv_cache\"" \
  "$tmp/start_category.json" -o "$tmp/out.html"
expect_memviz_error "category missing from start" 1 "rank 0: \"start\" has no entry for category \"comm\"" \
  "$tmp/start_missing.json" -o "$tmp/out.html"
expect_memviz_error "negative running total" 1 \
  "$tmp/negative.json: rank 0: events[1]: frees 8192 bytes of \"activations\", which holds only 4096" \
  "$tmp/negative.json" -o "$tmp/out.html"
expect_memviz_error "time going backwards" 1 \
  "$tmp/backwards.json: rank 0: events[1]: \"time_us\" 9.5 comes before the previous event's 10.5" \
  "$tmp/backwards.json" -o "$tmp/out.html"
expect_memviz_error "empty ranks" 1 "$tmp/no_ranks.json: \"ranks\" is empty" "$tmp/no_ranks.json" -o "$tmp/out.html"
expect_memviz_error "nonexistent snapshot" 1 "memory snapshot '$tmp/missing.json': No such file" \
  "$tmp/missing.json" -o "$tmp/out.html"
expect_memviz_error "bad -o extension" 2 "-o: '$tmp/out.png' must end in .html" "$tmp/good.json" -o "$tmp/out.png"
expect_memviz_error "missing -o" 2 "missing -o OUT" "$tmp/good.json"
cp "$tmp/good.json" "$tmp/good.html"
expect_memviz_error "-o the snapshot" 2 "-o: '$tmp/good.html' is the file to draw" "$tmp/good.html" -o "$tmp/good.html"
cmp -s "$tmp/good.json" "$tmp/good.html" || { failed=$((failed + 1)); echo "FAIL memviz -o naming the snapshot replaced it"; }
expect_memviz_error "missing snapshot" 2 "missing SNAPSHOT" -o "$tmp/out.html"
expect_memviz_error "unwritable -o" 1 "-o: cannot open '$tmp/no/such/dir/out.html.tmp' for writing" \
  "$tmp/good.json" -o "$tmp/no/such/dir/out.html"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
