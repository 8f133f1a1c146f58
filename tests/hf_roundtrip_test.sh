#!/bin/sh
# fsdp export and --init-from on their own (tests/hf_transformers_test.sh judges them
# against transformers): export -> init-from at another world size -> export gives the
# same bytes, for GPT-2 and for Llama 3 with and without grouped-query attention, tied
# and untied, in fp32 and bf16, as one file and as a sharded set; eval and train see
# the exported model as the one it came from; bad inputs are refused by name.
# Usage: hf_roundtrip_test.sh path/to/fsdp SOURCE_DIR MPIRUN...
FSDP=${1:?usage: hf_roundtrip_test.sh path/to/fsdp SOURCE_DIR MPIRUN...}
SRC=$2
shift 2
MPIRUN="$*"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
cat "$SRC"/src/*/*.c > "$tmp/corpus.txt"

ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

# run W COMMAND ARGS...: fsdp COMMAND on W ranks (one: without mpirun, which takes
# longer to start than the command runs); stdout in $tmp/out, stderr in $tmp/err.
run() {
  ranks=$1
  shift
  if [ "$ranks" -eq 1 ]; then "$FSDP" "$@" >"$tmp/out" 2>"$tmp/err"
  else $MPIRUN -np "$ranks" "$FSDP" "$@" >"$tmp/out" 2>"$tmp/err"; fi
}

# same NAME A B: files A and B are byte for byte the same.
same() {
  if cmp -s "$2" "$3"; then ok "$1"; else fail "$1: $2 and $3 differ"; fi
}

loss_of() { sed -n 's/^{"loss": \([^,]*\),.*/\1/p' "$tmp/out"; }

GPT2="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 4 --block-size 64"
LLAMA="--model llama3-debug --n-layer 2 --n-embd 64 --n-head 4 --ffn-hidden 96 --vocab-size 300 --block-size 64"
TIED="--model llama3-1b --n-layer 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ffn-hidden 96 --vocab-size 300 --block-size 64"

# roundtrip NAME W DTYPE MODEL_FLAGS...: export from a fresh initialisation, then load
# that on W ranks and export it again.
roundtrip() {
  name=$1 w=$2 dtype=$3
  shift 3
  if ! run 1 export "$@" --seed 7 --dtype "$dtype" -o "$tmp/$name.a"; then fail "$name: export: $(cat "$tmp/err")"; return; fi
  if ! run "$w" export --init-from "$tmp/$name.a" --dtype "$dtype" -o "$tmp/$name.b"; then
    fail "$name: export of the loaded model: $(cat "$tmp/err")"
    return
  fi
  same "$name: safetensors through $w ranks" "$tmp/$name.a/model.safetensors" "$tmp/$name.b/model.safetensors"
  same "$name: config.json" "$tmp/$name.a/config.json" "$tmp/$name.b/config.json"
}

roundtrip gpt2 2 fp32 $GPT2
roundtrip gpt2_bf16 3 bf16 $GPT2
roundtrip llama_gqa 3 fp32 $LLAMA --n-kv-head 2
roundtrip llama_mha 2 fp32 $LLAMA --n-kv-head 4
roundtrip llama_tied 2 fp32 $TIED
roundtrip llama_bf16 2 bf16 $LLAMA --n-kv-head 2

# A sharded set: several files and their index, read through the folder and through the
# index, at two world sizes, and written back as the one file it came from.
if run 2 export --init-from "$tmp/gpt2.a" --max-shard-size 100KB -o "$tmp/sharded"; then
  files=$(ls "$tmp/sharded" | grep -c '^model-0000[0-9]-of-0000[0-9].safetensors$')
  if [ -f "$tmp/sharded/model.safetensors.index.json" ] && [ "$files" -gt 2 ]; then ok "sharded: $files files and an index"
  else fail "sharded: $(ls "$tmp/sharded")"; fi
  run 3 export --init-from "$tmp/sharded" -o "$tmp/unsharded.dir"
  same "sharded: back to one file through a folder" "$tmp/gpt2.a/model.safetensors" "$tmp/unsharded.dir/model.safetensors"
  run 1 export --init-from "$tmp/sharded/model.safetensors.index.json" -o "$tmp/unsharded.index"
  same "sharded: back to one file through the index" "$tmp/gpt2.a/model.safetensors" "$tmp/unsharded.index/model.safetensors"
  # Exporting one file over the set removes the set.
  run 1 export --init-from "$tmp/gpt2.a" -o "$tmp/sharded"
  if [ "$(ls "$tmp/sharded" | tr '\n' ' ')" = "config.json model.safetensors " ]; then ok "one file over a set replaces it"
  else fail "one file over a set: $(ls "$tmp/sharded")"; fi
else
  fail "sharded export: $(cat "$tmp/err")"
fi

# An export that fails over an earlier one (here a folder where its last file's temporary
# goes) leaves the earlier one as it was, not a mix of the two that still loads, and no
# temporary file. Temporaries of a killed export do not stop a later one, which removes them.
run 1 export $GPT2 --seed 1 --max-shard-size 100KB -o "$tmp/over"
(cd "$tmp/over" && cksum *) >"$tmp/over.sums"
last=$(ls "$tmp/over" | grep '^model-.*safetensors$' | tail -n 1)
mkdir "$tmp/over/$last.tmp"
if run 1 export $GPT2 --seed 2 --max-shard-size 100KB -o "$tmp/over"; then
  fail "an export onto a blocked name: succeeded"
elif ! grep -qF "$tmp/over/$last.tmp: cannot open for writing" "$tmp/err"; then
  fail "an export onto a blocked name: $(cat "$tmp/err")"
else
  rmdir "$tmp/over/$last.tmp"
  if (cd "$tmp/over" && cksum *) | cmp -s - "$tmp/over.sums"; then ok "a failed export leaves the earlier one as it was"
  else fail "a failed export changed the earlier one: $(ls "$tmp/over" | tr '\n' ' ')"; fi
fi
touch "$tmp/over/model-00001-of-00007.safetensors.tmp" "$tmp/over/model-00002-of-00009.safetensors.tmp" \
  "$tmp/over/model.safetensors.tmp"
run 1 export $GPT2 --seed 2 --max-shard-size 100KB -o "$tmp/over.clean"
(cd "$tmp/over.clean" && cksum *) >"$tmp/clean.sums"
if run 1 export $GPT2 --seed 2 --max-shard-size 100KB -o "$tmp/over" &&
   (cd "$tmp/over" && cksum *) | cmp -s - "$tmp/clean.sums"; then
  ok "an export over a killed one's temporaries: written whole, the temporaries gone"
else
  fail "an export over temporaries: $(ls "$tmp/over" | tr '\n' ' ') $(cat "$tmp/err")"
fi

# eval: the loaded model is the one it was exported from, at any world size.
EVAL="--data $tmp/corpus.txt --seq-len 16 --batch-size 2 --batches 6"
run 1 eval $GPT2 --seed 7 $EVAL && fresh=$(loss_of)
for w in 1 2 3; do
  if run "$w" eval --init-from "$tmp/gpt2.a" $EVAL && [ -n "$fresh" ] && [ "$(loss_of)" = "$fresh" ]; then
    ok "eval on $w ranks of the exported GPT-2: loss $fresh, as the model it came from"
  else
    fail "eval on $w ranks: loss '$(loss_of)', the fresh model's '$fresh': $(cat "$tmp/err")"
  fi
done
run 1 eval $LLAMA --n-kv-head 2 --seed 7 $EVAL && fresh=$(loss_of)
if run 2 eval --init-from "$tmp/llama_gqa.a/model.safetensors" $EVAL && [ "$(loss_of)" = "$fresh" ]; then
  ok "eval of the exported Llama through its file: loss $fresh"
else
  fail "eval of the exported Llama: '$(loss_of)', not '$fresh'"
fi

# train: --init-from starts where the fresh initialisation it was exported from starts.
TRAIN="--data $tmp/corpus.txt --seq-len 16 --batch-size 2 --steps 2"
losses() { sed 's/.*"loss":\([^,]*\),"grad_norm":\([^,]*\),.*/\1 \2/' "$1"; }
run 2 train $GPT2 --seed 7 $TRAIN --log "$tmp/fresh.jsonl"
run 2 train --init-from "$tmp/gpt2.a" --seed 7 $TRAIN --log "$tmp/loaded.jsonl"
if [ -s "$tmp/fresh.jsonl" ] && [ "$(losses "$tmp/fresh.jsonl")" = "$(losses "$tmp/loaded.jsonl")" ]; then
  ok "train --init-from: the fresh model's losses and grad norms, $(losses "$tmp/loaded.jsonl" | tr '\n' ' ')"
else
  fail "train --init-from: '$(losses "$tmp/loaded.jsonl")', not '$(losses "$tmp/fresh.jsonl")': $(cat "$tmp/err")"
fi

# A bare .safetensors file has no config.json beside it: the model flags say what it holds
# (and --seed, which would make another model, does not count).
mkdir "$tmp/bare"
cp "$tmp/gpt2.a/model.safetensors" "$tmp/bare/gpt2.safetensors"
run 1 eval $GPT2 --seed 7 $EVAL && seed7=$(loss_of)
run 1 eval $GPT2 --seed 1 $EVAL && seed1=$(loss_of)
if run 1 eval --init-from "$tmp/bare/gpt2.safetensors" $GPT2 --seed 1 $EVAL && [ "$(loss_of)" = "$seed7" ] &&
   [ "$seed7" != "$seed1" ]; then
  ok "a bare file with the model flags: loss $seed7"
else
  fail "a bare file: loss '$(loss_of)', not '$seed7': $(cat "$tmp/err")"
fi

# expect_error NAME TEXT W COMMAND ARGS...: fails, and stderr says TEXT.
expect_error() {
  name=$1 want=$2
  shift 2
  if run "$@"; then fail "$name: succeeded"; return; fi
  if grep -qF -- "$want" "$tmp/err"; then ok "$name"; else fail "$name: expected '$want' in: $(head -n 3 "$tmp/err")"; fi
}

expect_error "a shape flag that disagrees" "--n-layer 3 disagrees with --init-from's $tmp/gpt2.a/config.json: n_layer 3 here, 2 there" \
  1 eval --init-from "$tmp/gpt2.a" --n-layer 3 $EVAL
expect_error "a preset of another family" "--model llama3-debug: a llama3 model, but --init-from $tmp/gpt2.a holds a gpt2 one" \
  1 export --init-from "$tmp/gpt2.a" --model llama3-debug -o "$tmp/x"
expect_error "a preset of another shape" "--model gpt2-tiny disagrees with --init-from's $tmp/gpt2.a/config.json: n_embd 128 here, 64 there" \
  1 eval --init-from "$tmp/gpt2.a" --model gpt2-tiny $EVAL
mkdir "$tmp/more_layers" "$tmp/other_vocab" "$tmp/bert"
cp "$tmp/gpt2.a/model.safetensors" "$tmp/more_layers/"
sed 's/"n_layer":.*2,/"n_layer": 3,/' "$tmp/gpt2.a/config.json" > "$tmp/more_layers/config.json"
expect_error "a tensor missing" "$tmp/more_layers: no tensor 'transformer.h.2.ln_1.weight', which the model has" \
  2 eval --init-from "$tmp/more_layers" $EVAL
cp "$tmp/gpt2.a/model.safetensors" "$tmp/other_vocab/"
sed 's/"vocab_size":.*256,/"vocab_size": 200,/' "$tmp/gpt2.a/config.json" > "$tmp/other_vocab/config.json"
expect_error "a tensor of another shape" "model.safetensors: tensor 'transformer.wte.weight': shape [256, 64], but the model's is [200, 64]" \
  1 export --init-from "$tmp/other_vocab" -o "$tmp/x"
sed 's/"vocab_size":.*256,/"vocab_size": 1099511627776,/' "$tmp/gpt2.a/config.json" > "$tmp/other_vocab/config.json"
expect_error "an integer past a C int" "config.json: \"vocab_size\" is 1099511627776, beyond a C int's 2147483647" \
  1 eval --init-from "$tmp/other_vocab" $EVAL
sed 's/"model_type":.*"gpt2"/"model_type": "bert"/' "$tmp/gpt2.a/config.json" > "$tmp/bert/config.json"
expect_error "an unknown model_type" "$tmp/bert/config.json: model_type 'bert' is none of the families" \
  1 eval --init-from "$tmp/bert" $EVAL
sed 's/"activation_function":.*"gelu_new"/"activation_function": "relu"/' "$tmp/gpt2.a/config.json" > "$tmp/bert/config.json"
expect_error "an activation the kernels do not compute" "\"activation_function\" must be \"gelu_new\" here, not relu" \
  1 eval --init-from "$tmp/bert" $EVAL
mkdir "$tmp/theta"
cp "$tmp/llama_gqa.a/model.safetensors" "$tmp/theta/"
sed 's/"rope_theta":[^,]*,/"rope_theta": 1e-300,/' "$tmp/llama_gqa.a/config.json" > "$tmp/theta/config.json"
expect_error "a rope_theta of no fp32 number" "\"rope_theta\" is not a positive fp32 number" \
  1 eval --init-from "$tmp/theta" $EVAL
sed 's/"rope_theta":[^,]*,/"rope_theta": 0.5,/' "$tmp/llama_gqa.a/config.json" > "$tmp/theta/config.json"
expect_error "a rope_theta below 1" "rope_theta must be above 1" 1 eval --init-from "$tmp/theta" $EVAL
# A key given twice (cJSON took the first, transformers the last) and a NUL in a
# tensor's name (cJSON ended the name there).
mkdir "$tmp/twice" "$tmp/nul"
cp "$tmp/gpt2.a/model.safetensors" "$tmp/twice/"
sed 's/^{/{"n_layer": 1,/' "$tmp/gpt2.a/config.json" > "$tmp/twice/config.json"
expect_error "a config key given twice" "$tmp/twice/config.json: \"n_layer\" is given twice" \
  1 eval --init-from "$tmp/twice" $EVAL
cp "$tmp/gpt2.a/config.json" "$tmp/nul/"
python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(d.replace(b"transformer.ln_f.bias\"", b"transformer.ln_f.bia\\u0000\"", 1))
' "$tmp/gpt2.a/model.safetensors" "$tmp/nul/model.safetensors"
expect_error "a NUL in a tensor name" "model.safetensors: the header escapes a NUL (\\u0000) at byte" \
  1 eval --init-from "$tmp/nul" $EVAL
# weights VALUE: gpt2.a's model with every weight VALUE, in $tmp/VALUE.
weights() {
  mkdir "$tmp/$1"
  cp "$tmp/gpt2.a/config.json" "$tmp/$1/"
  python3 -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", d[:8])[0]
open(sys.argv[2], "wb").write(d[:8 + n] + struct.pack("<f", float(sys.argv[3])) * ((len(d) - 8 - n) // 4))
' "$tmp/gpt2.a/model.safetensors" "$tmp/$1/model.safetensors" "$1"
}
# NaN weights are refused where they are read (sample printed token 0 over and over).
weights nan
expect_error "NaN weights" "model.safetensors: tensor 'transformer.wte.weight' holds a NaN: weights must be finite" \
  1 sample --init-from "$tmp/nan" --prompt-tokens 1 --max-new-tokens 2
# Finite weights that make the loss NaN (their activations overflow): valid JSON (null, as
# train's --log writes it), said; sample refuses such logits.
weights 3e38
if run 1 eval --init-from "$tmp/3e38" $EVAL && tail -n 1 "$tmp/out" > "$tmp/json" &&
   python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["loss"] is None' "$tmp/json" &&
   grep -q "eval: warning: the loss is NaN" "$tmp/err"; then
  ok "a NaN loss is null"
else
  fail "a NaN loss: $(cat "$tmp/out" "$tmp/err")"
fi
run 1 train --init-from "$tmp/3e38" --data "$tmp/corpus.txt" --seq-len 16 --batch-size 2 --steps 1 --val-every 1 \
  --val-batches 1 --log "$tmp/nan.jsonl"
grep -q '"val_loss":null' "$tmp/nan.jsonl" && ok "a NaN validation loss is logged as null" ||
  fail "a NaN validation loss: $(cat "$tmp/nan.jsonl" "$tmp/err")"
expect_error "logits that are not finite" "sample: the logit of token 0 is NaN" \
  1 sample --init-from "$tmp/3e38" --prompt-tokens 1 --max-new-tokens 2
expect_error "--trace over --init-from's weights" "--trace: '$tmp/gpt2.a/model.safetensors' is one of --init-from's files" \
  1 train --init-from "$tmp/gpt2.a" --data "$tmp/corpus.txt" --seq-len 16 --batch-size 2 --steps 1 \
  --trace "$tmp/gpt2.a/model.safetensors"
expect_error "a missing --init-from" "--init-from: $tmp/none: No such file or directory" 1 eval --init-from "$tmp/none" $EVAL
expect_error "--output a file" "--output: '$tmp/corpus.txt' exists and is not a folder" 1 export $GPT2 -o "$tmp/corpus.txt"
expect_error "--dtype fp16" "--dtype: unknown dtype 'fp16'" 1 export $GPT2 -o "$tmp/x" --dtype fp16
expect_error "--max-shard-size" "--max-shard-size: '5XB' is not a size" 1 export $GPT2 -o "$tmp/x" --max-shard-size 5XB
expect_error "--output missing" "--output is required" 1 export $GPT2
# --batches need not divide by W: a last global batch of fewer windows is padded, the
# padding left out of the loss.
if run 1 eval $GPT2 --seed 7 --data "$tmp/corpus.txt" --seq-len 16 --batch-size 2 --batches 3 && one=$(loss_of) &&
   run 2 eval $GPT2 --seed 7 --data "$tmp/corpus.txt" --seq-len 16 --batch-size 2 --batches 3 &&
   awk -v a="$one" -v b="$(loss_of)" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-6 * a) }'; then
  ok "--batches 3 on 2 ranks: loss $one, as on 1"
else
  fail "--batches 3 on 2 ranks: loss '$(loss_of)', not '$one': $(cat "$tmp/err")"
fi
expect_error "too few windows" "windows of 17 tokens, but --batches 100000 of 2 windows need 200000" \
  1 eval $GPT2 --data "$tmp/corpus.txt" --seq-len 16 --batch-size 2 --batches 100000

echo "hf_roundtrip: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
