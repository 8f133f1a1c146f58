#!/bin/sh
# What fsdp writes, it reads back: each file kind written by one command and read by the
# command that consumes it, at the options that change the file's content, the content
# read back byte for byte or equal to what was written:
# - checkpoints (rank files and metadata.json): a run resumed from its step-2 checkpoint
#   writes a step-4 checkpoint byte-identical to the uninterrupted run's, under full,
#   grad-op and none sharding, fp32, bf16 and fp16 (the loss scale), HSDP, accumulation,
#   and after a finished run was given more steps (its schedule re-anchored);
# - safetensors: export -> --init-from -> export gives the same bytes, fp32 and bf16, one
#   file and a set split by --max-shard-size, GPT-2 and Llama 3;
# - token files: fsdp tokenize's uint16 and uint32 files, one and in shards (with and
#   without a validation shard), from text, JSON Lines and separated documents, with and
#   without a document token, are read by fsdp eval: every shard's windows as its header
#   counts them, and one file's loss equal to that of the same text through --tokenizer;
# - memory snapshots: fsdp memviz's peak of each rank is the one the training log gave;
# - traces: fsdp traceviz finds the traced steps, and each step's spans and length are
#   those the file holds.
# Usage: round_trip_test.sh path/to/fsdp PYTHON SOURCE_DIR MPIRUN...
. "$(dirname "$0")/train_test_setup.sh"
set +e # a case that fails is counted, and the others still run
MPIRUN="$*"
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }
run() {  # run RANKS COMMAND ARGS...: fsdp on RANKS ranks, its output in $tmp/out
  ranks=$1
  shift
  timeout 300 $MPIRUN -np "$ranks" "$FSDP" "$@" >"$tmp/out" 2>&1 || { fail "fsdp $*: $(grep -m2 error "$tmp/out")"; return 1; }
}
same_files() {  # same_files NAME DIR_A DIR_B: every file of A byte-identical in B, and no other
  a=$(cd "$2" && find . -type f | sort) b=$(cd "$3" && find . -type f | sort)
  if [ "$a" != "$b" ]; then fail "$1: the files differ: $(echo $a) / $(echo $b)"; return; fi
  for f in $a; do cmp -s "$2/$f" "$3/$f" || { fail "$1: $f differs"; return; }; done
  ok "$1"
}

TINY="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 16 --global-batch-size 4 --data $tmp/corpus.txt"

# ---- checkpoints ----
checkpoint_case() {  # checkpoint_case NAME RANKS FLAGS...
  name=$1 ranks=$2
  shift 2
  d="$tmp/ck_$name"
  run "$ranks" train $TINY --steps 4 --checkpoint-dir "$d/whole" --checkpoint-every 2 "$@" || return
  run "$ranks" train $TINY --steps 4 --checkpoint-dir "$d/resumed" --resume "$d/whole/step-00000002" "$@" || return
  same_files "checkpoint, $name: resumed at step 2, step 4's files" "$d/whole/step-00000004" "$d/resumed/step-00000004"
}
checkpoint_case full 2 --sharding full
checkpoint_case grad-op 2 --sharding grad-op --grad-accum 2
checkpoint_case none 2 --sharding none
checkpoint_case bf16 2 --param-dtype bf16 --reduce-dtype bf16
checkpoint_case fp16 1 --param-dtype fp16 --loss-scale 1024
checkpoint_case hsdp 2 --mesh 2,1
# A finished run given more steps: its schedule, re-anchored, is in the metadata of the
# checkpoints after it, and a run resumed from one of them takes the very same rates (main
# refused to read it: a decay_progress of 1).
d="$tmp/ck_extended"
run 2 train $TINY --warmup 1 --steps 4 --checkpoint-dir "$d/whole" &&
  run 2 train $TINY --warmup 1 --steps 8 --checkpoint-dir "$d/whole" --checkpoint-every 2 --resume auto &&
  run 2 train $TINY --warmup 1 --steps 8 --checkpoint-dir "$d/resumed" --resume "$d/whole/step-00000006" &&
  same_files "checkpoint, a finished run given more steps: resumed at step 6, step 8's files" \
    "$d/whole/step-00000008" "$d/resumed/step-00000008"

# ---- safetensors ----
export_case() {  # export_case NAME MODEL_FLAGS EXPORT_FLAGS
  name=$1
  run 1 export $2 -o "$tmp/hf_$name" $3 || return
  run 2 export --init-from "$tmp/hf_$name" -o "$tmp/hf_${name}_again" $3 || return
  same_files "safetensors, $name: export -> --init-from -> export" "$tmp/hf_$name" "$tmp/hf_${name}_again"
}
export_case gpt2-fp32 "--model gpt2-tiny --n-layer 2" ""
export_case gpt2-bf16-split "--model gpt2-tiny --n-layer 2" "--dtype bf16 --max-shard-size 100KB"
export_case llama-bf16 "--model llama3-debug --n-layer 2" "--dtype bf16"

# ---- token files ----
"$PYTHON" "$SRC/tests/tokenizer_files.py" write "$tmp"
head -c 20000 "$tmp/corpus.txt" >"$tmp/text.txt"
"$PYTHON" - "$tmp/text.txt" "$tmp/docs.jsonl" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
with open(sys.argv[2], "w") as f:
    for part in text.split("\n\n"):
        f.write(json.dumps({"text": part}) + "\n")
PY
# evaluate NAME TOKENIZER DATA: fsdp eval of DATA; every window of each shard, as its header counts them.
evaluate() {
  name=$1 vocab=$2
  shift 2
  run 1 eval --model gpt2-tiny --n-layer 1 --n-embd 32 --n-head 2 --vocab-size "$vocab" --seq-len 16 --batch-size 1 \
    "$@" || return 1
  loss=$(sed -n 's/^{"loss": \([^,]*\),.*/\1/p' "$tmp/out")
  [ -n "$loss" ] || { fail "$name: eval printed no loss"; return 1; }
}
tokens_case() {  # tokens_case NAME TOKENIZER VOCAB TOKENIZE_FLAGS...
  name=$1 tokenizer=$2 vocab=$3
  shift 3
  rm -f "$tmp"/tok_*
  "$FSDP" tokenize --tokenizer "$tokenizer" "$@" >"$tmp/out" 2>&1 || { fail "$name: tokenize: $(grep error "$tmp/out")"; return; }
  windows=0
  for f in "$tmp"/tok_*.bin; do
    count=$("$PYTHON" "$SRC/tests/tokenizer_files.py" show "$f" | head -n 1 | cut -d' ' -f3)
    windows=$((windows + (count - 1) / 16))
  done
  evaluate "$name" "$vocab" --data "$tmp/tok_*.bin" || return
  read_windows=$(sed -n 's/.*"windows": \([0-9]*\).*/\1/p' "$tmp/out")
  [ "$read_windows" = "$windows" ] && ok "tokens, $name: eval reads the $windows windows the headers count" ||
    fail "tokens, $name: eval read $read_windows windows, the headers count $windows"
}
G="$tmp/gpt2.json" B="$tmp/big.json"
tokens_case "uint16, one file" "$G" 320 -o "$tmp/tok_one.bin" "$tmp/text.txt"
tokens_case "uint32, one file" "$B" 70002 -o "$tmp/tok_one.bin" "$tmp/text.txt"
tokens_case "uint16 shards, a validation shard" "$G" 320 -o "$tmp/tok" --shard-tokens 3000 "$tmp/text.txt"
tokens_case "uint32 shards, no validation shard" "$B" 70002 -o "$tmp/tok" --shard-tokens 3000 --val-tokens 0 \
  "$tmp/text.txt"
tokens_case "JSON Lines, no document token" "$G" 320 -o "$tmp/tok_one.bin" --jsonl-key text --document-token none \
  "$tmp/docs.jsonl"
tokens_case "separated documents" "$G" 320 -o "$tmp/tok" --shard-tokens 5000 --document-separator '\n\n' \
  "$tmp/text.txt"
for t in "$G 320" "$B 70002"; do
  set -- $t
  "$FSDP" tokenize --tokenizer "$1" -o "$tmp/same.bin" "$tmp/text.txt" >/dev/null 2>&1 &&
    evaluate "tokenize then eval" "$2" --data "$tmp/same.bin" && from_file=$loss &&
    evaluate "eval --tokenizer" "$2" --data "$tmp/text.txt" --tokenizer "$1" &&
    { [ "$from_file" = "$loss" ] && ok "tokens, $(basename "$1"): the file's loss is the text's through --tokenizer ($loss)" ||
      fail "tokens, $(basename "$1"): the file's loss $from_file, the text's $loss"; }
done

# ---- memory snapshots and traces ----
outputs_case() {  # outputs_case NAME RANKS FLAGS...
  name=$1 ranks=$2
  shift 2
  run "$ranks" train $TINY --steps 4 --log "$tmp/log_$name.jsonl" --memory-snapshot "$tmp/snap_$name.json" \
    --snapshot-steps 2:3 --trace "$tmp/trace_$name.json" --trace-steps 2:4 "$@" || return
  "$FSDP" memviz "$tmp/snap_$name.json" -o "$tmp/snap_$name.svg" >/dev/null 2>&1 || { fail "memviz $name"; return; }
  "$PYTHON" - "$tmp/log_$name.jsonl" "$tmp/snap_$name.svg" <<'PY' && ok "snapshot, $name: memviz's peaks are the log's" ||
import json, re, sys
log = [json.loads(line) for line in open(sys.argv[1])]
steps = [r for r in log if 2 <= r["step"] <= 3]
drawn = [int(b) for b in re.findall(r'data-peak-bytes="(\d+)"', open(sys.argv[2]).read())]
want0, want = max(r["mem_peak_bytes_rank0"] for r in steps), max(r["mem_peak_bytes"] for r in steps)
if not drawn or drawn[0] != want0 or max(drawn) != want:
    sys.exit(f"memviz drew {drawn}, the log says rank 0 {want0} and at most {want}")
PY
    fail "snapshot, $name"
  for rank in $(seq 0 $((ranks - 1))); do
    for step in 1 2 3; do
      (cd "$tmp" && "$FSDP" traceviz "trace_$name.json" -o "t.svg" --rank "$rank" --step "$step") >"$tmp/tv" 2>&1 ||
        { fail "traceviz $name rank $rank step $step: $(cat "$tmp/tv")"; continue; }
      "$PYTHON" - "$tmp/trace_$name.json" "$rank" "$step" "$(cat "$tmp/tv")" <<'PY' || fail "trace, $name, rank $rank, step $step"
import json, re, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
rank, step, said = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
spans = [e for e in events if e.get("ph") == "X" and e["pid"] == rank]
ends = sorted(e["ts"] + e["dur"] for e in spans if e["name"] == "optimizer" or e["name"].startswith("optimizer "))
begin = ends[step - 2] if step > 1 else min(e["ts"] for e in spans)
end = ends[step - 1]
n = sum(1 for e in spans if e["ts"] < end and e["ts"] + e["dur"] > begin)
want = f"rank {rank}, step {step} of {len(ends)}, {(end - begin) / 1e3:.2f} ms, {n} spans"
if len(ends) != 3 or want not in said:
    sys.exit(f"traceviz said '{said}', the file holds '{want}'")
PY
    done
  done
  ok "trace, $name: traceviz's steps, spans and lengths are the file's"
}
outputs_case w1 1
outputs_case w2-bf16 2 --param-dtype bf16 --sharding grad-op

echo "round_trip: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
