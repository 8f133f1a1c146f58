#!/bin/sh
# Greedy `fsdp sample` gives transformers' generate(do_sample=False) tokens: on models fsdp
# exports (GPT-2; Llama 3 with grouped-query attention, and tied) and on models
# transformers makes (a GPT-2; a Llama with Llama 3.1's RoPE scaling reached), one
# generation stopping short of max_seq_len and one reaching it.
# Needs the environment scripts/torch-venv.sh makes (once, from PyPI); without it, skipped (77).
# Usage: sample_transformers_test.sh path/to/fsdp SOURCE_DIR
FSDP=${1:?usage: sample_transformers_test.sh path/to/fsdp SOURCE_DIR}
SRC=$2
PYTHON=$(sh "$SRC/scripts/torch-venv.sh") || { echo "SKIPPED: no transformers environment (see above)"; exit 77; }
CHECK="$PYTHON $SRC/tools/hf_check.py"
tmp=$(mktemp -d) || exit 2
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
failed=0

SHAPE="--n-layer 2 --n-embd 64 --n-head 4 --block-size 32"
LLAMA="$SHAPE --ffn-hidden 96 --vocab-size 300"
"$FSDP" export --model gpt2-tiny $SHAPE --vocab-size 300 --seed 11 -o "$tmp/gpt2" >"$tmp/err" 2>&1 &&
"$FSDP" export --model llama3-debug $LLAMA --n-kv-head 2 --seed 11 -o "$tmp/llama_gqa" >>"$tmp/err" 2>&1 &&
"$FSDP" export --model llama3-1b $LLAMA --n-kv-head 2 --seed 11 -o "$tmp/llama_gqa_tied" >>"$tmp/err" 2>&1 ||
  { echo "export failed: $(tail -n 5 "$tmp/err")"; exit 1; }
$CHECK create gpt2 "$tmp/hf_gpt2" n_layer=2 n_embd=64 n_head=4 vocab_size=300 n_positions=32 >/dev/null 2>"$tmp/err" &&
$CHECK create llama "$tmp/hf_llama" num_hidden_layers=2 hidden_size=64 num_attention_heads=4 num_key_value_heads=2 \
  intermediate_size=96 vocab_size=300 max_position_embeddings=32 rms_norm_eps=1e-5 rope_theta=500000 \
  rope_scaling=llama3:8:1:4:8 >/dev/null 2>>"$tmp/err" ||
  { echo "hf_check.py create failed: $(tail -n 5 "$tmp/err")"; exit 1; }

models="gpt2 llama_gqa llama_gqa_tied hf_gpt2 hf_llama"
dirs=""
for m in $models; do dirs="$dirs $tmp/$m"; done
# prompt, new tokens: 5 + 20 stops short of the 32 positions, 7 + 25 reaches them.
for case in "3,1,4,1,5 20" "299,0,7,7,7,42,100 25"; do
  set -- $case
  $PYTHON "$SRC/tools/hf_generate.py" "$1" "$2" $dirs >"$tmp/hf" 2>"$tmp/err" ||
    { echo "hf_generate.py failed: $(tail -n 5 "$tmp/err")"; exit 1; }
  i=0
  for m in $models; do
    i=$((i + 1))
    want=$(sed -n "${i}p" "$tmp/hf")
    got=$("$FSDP" sample --init-from "$tmp/$m" --prompt-tokens "$1" --max-new-tokens "$2" --temperature 0 2>"$tmp/err")
    if [ "$got" = "$want" ] && [ -n "$got" ]; then
      echo "ok   $m prompt $1: $(echo "$got" | wc -w) tokens as transformers'"
    else
      failed=$((failed + 1))
      echo "FAIL $m prompt $1: fsdp sample '$got' ($(tail -n 2 "$tmp/err")), transformers '$want'"
    fi
  done
done
[ "$failed" -eq 0 ] || { echo "$failed failed"; exit 1; }
echo "all greedy generations equal transformers'"
