#!/bin/sh
# transformers judges the interop: models fsdp exports (GPT-2; Llama 3 with and without
# grouped-query attention, tied and untied) load with from_pretrained and give the loss
# `fsdp eval` gives on the same windows, within 1e-5 in fp32; models transformers makes
# and saves (save_pretrained) give the same loss through `fsdp eval --init-from`.
# Needs the environment scripts/torch-venv.sh makes (once, from PyPI); without it, skipped (77).
# Usage: hf_transformers_test.sh path/to/fsdp SOURCE_DIR MPIRUN...
FSDP=${1:?usage: hf_transformers_test.sh path/to/fsdp SOURCE_DIR MPIRUN...}
SRC=$2
shift 2
MPIRUN="$*"
PYTHON=$(sh "$SRC/scripts/torch-venv.sh") || { echo "SKIPPED: no transformers environment (see above)"; exit 77; }
CHECK="$PYTHON $SRC/tools/hf_check.py"
tmp=$(mktemp -d) || exit 2
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

T=16 B=2 N=6  # N divisible by every world size below
$CHECK tokens "$tmp/tokens.bin" 300 $((T * B * N + 1)) 1 >/dev/null || { echo "hf_check.py tokens failed"; exit 1; }

SHAPE="--n-layer 2 --n-embd 64 --n-head 4 --block-size 64"
LLAMA="$SHAPE --ffn-hidden 96 --vocab-size 300"
# name W flags: exported from a fresh initialisation on W ranks.
exports="gpt2 2 --model gpt2-tiny $SHAPE --vocab-size 300
llama_gqa 2 --model llama3-debug $LLAMA --n-kv-head 2
llama_mha 1 --model llama3-debug $LLAMA --n-kv-head 4
llama_gqa_tied 3 --model llama3-1b $LLAMA --n-kv-head 2"
echo "$exports" | while read -r name w flags; do
  # mpirun passes its stdin on to rank 0: the list must not be it.
  if ! $MPIRUN -np "$w" "$FSDP" export $flags --seed 11 -o "$tmp/$name" </dev/null >"$tmp/err" 2>&1; then
    echo "export $name failed: $(cat "$tmp/err")"
    exit 1
  fi
done || { fail "export"; exit 1; }

# Made by transformers: a GPT-2, and Llamas with Llama 3.1's RoPE scaling reached within
# the windows (an original context of 8), untied and tied.
$CHECK create gpt2 "$tmp/hf_gpt2" n_layer=2 n_embd=64 n_head=4 vocab_size=300 n_positions=64 >/dev/null 2>"$tmp/err" &&
$CHECK create llama "$tmp/hf_llama" num_hidden_layers=2 hidden_size=64 num_attention_heads=4 num_key_value_heads=2 \
  intermediate_size=96 vocab_size=300 max_position_embeddings=64 rms_norm_eps=1e-5 rope_theta=500000 \
  rope_scaling=llama3:8:1:4:8 >/dev/null 2>>"$tmp/err" &&
$CHECK create llama "$tmp/hf_llama_tied" num_hidden_layers=2 hidden_size=64 num_attention_heads=4 \
  num_key_value_heads=1 intermediate_size=96 vocab_size=300 max_position_embeddings=64 tie_word_embeddings=true \
  >/dev/null 2>>"$tmp/err" || { echo "hf_check.py create failed: $(tail -n 5 "$tmp/err")"; exit 1; }

models="gpt2 llama_gqa llama_mha llama_gqa_tied hf_gpt2 hf_llama hf_llama_tied"
dirs=""
for m in $models; do dirs="$dirs $tmp/$m"; done
$CHECK loss "$tmp/tokens.bin" $T $B $N $dirs >"$tmp/hf_losses" 2>"$tmp/err" ||
  { echo "hf_check.py loss failed: $(tail -n 5 "$tmp/err")"; exit 1; }

i=0
for m in $models; do
  i=$((i + 1))
  hf=$(sed -n "${i}s/^{\"loss\": \([^}]*\)}/\1/p" "$tmp/hf_losses")
  w=$(( (i % 3) + 1 ))
  if ! $MPIRUN -np $w "$FSDP" eval --init-from "$tmp/$m" --data "$tmp/tokens.bin" --seq-len $T --batch-size $B \
       --batches $N >"$tmp/out" 2>"$tmp/err"; then
    fail "$m: fsdp eval failed: $(tail -n 3 "$tmp/err")"
    continue
  fi
  ours=$(sed -n 's/^{"loss": \([^,]*\),.*/\1/p' "$tmp/out")
  if awk -v a="$ours" -v b="$hf" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= 1e-5) }'; then
    ok "$m: fsdp eval on $w ranks $ours, transformers $hf"
  else
    fail "$m: fsdp eval on $w ranks '$ours', transformers '$hf'"
  fi
done

echo "hf_transformers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
