#!/bin/sh
# `fsdp sample` from the command line: the same --seed gives the same tokens, another
# seed others, --top-k 1 the greedy tokens; a byte-level model prints bytes; an llm.c
# tokenizer file prints each token's text; every bad input (the prompt missing, too
# long or out of the vocabulary, --max-new-tokens 0, a bad tokenizer file, several
# ranks) ends with a message naming the flag or file and a non-zero exit.
# Usage: sample_test.sh path/to/fsdp MPIRUN...
FSDP=${1:?usage: sample_test.sh path/to/fsdp MPIRUN...}
shift
MPIRUN="$*"
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { failed=$((failed + 1)); echo "FAIL $1"; }

SHAPE="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 4 --block-size 32"
"$FSDP" export $SHAPE --vocab-size 300 --seed 5 -o "$tmp/m" >/dev/null 2>&1 &&
"$FSDP" export $SHAPE --vocab-size 256 --seed 5 -o "$tmp/bytes" >/dev/null 2>&1 || { echo "export failed"; exit 1; }
sample() { "$FSDP" sample --init-from "$tmp/m" --prompt-tokens 1,2,3 --max-new-tokens 25 "$@" 2>"$tmp/err"; }

a=$(sample --seed 1) b=$(sample --seed 1) c=$(sample --seed 2)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "the same seed, the same tokens" || fail "seed 1 twice: '$a' and '$b'"
[ "$a" != "$c" ] && ok "another seed, other tokens" || fail "seeds 1 and 2 both gave '$a'"
[ "$(echo "$a" | wc -w)" -eq 25 ] && ok "25 tokens" || fail "not 25 tokens: '$a'"
greedy=$(sample --temperature 0) top1=$(sample --top-k 1 --temperature 2 --seed 9)
[ -n "$greedy" ] && [ "$greedy" = "$top1" ] && ok "--top-k 1 is greedy" || fail "top-k 1 '$top1', greedy '$greedy'"
hot=$(sample --temperature 1.5 --top-k 5 --seed 3)
[ "$hot" != "$greedy" ] && ok "--top-k 5 at temperature 1.5 departs from greedy" || fail "top-k 5 sampled greedily"
# 29 positions left after 3: a longer request stops there, saying so.
long=$(sample --max-new-tokens 100 --seed 1)
[ "$(echo "$long" | wc -w)" -eq 29 ] && grep -q "max_seq_len 32" "$tmp/err" && ok "stops at max_seq_len" ||
  fail "at max_seq_len: $(echo "$long" | wc -w) tokens, $(cat "$tmp/err")"
# The largest --max-new-tokens (3 + it overflowed an int: an internal check failed).
long=$(sample --max-new-tokens 2147483647 --seed 1)
[ "$(echo "$long" | wc -w)" -eq 29 ] && grep -q "max_seq_len 32" "$tmp/err" && ok "--max-new-tokens 2^31-1 stops there" ||
  fail "--max-new-tokens 2147483647: $(echo "$long" | wc -w) tokens, $(cat "$tmp/err")"

# A preset's heads changed: GPT-2's kv heads follow --n-head (its KV cache kept the
# preset's 4 and stopped at the first token).
heads=$("$FSDP" sample --model gpt2-tiny --n-head 2 --vocab-size 300 --prompt-tokens 1 --max-new-tokens 3 2>"$tmp/err")
[ "$(echo "$heads" | wc -w)" -eq 3 ] && ok "gpt2-tiny --n-head 2 samples" || fail "--n-head 2: '$heads' $(cat "$tmp/err")"

# A byte-level model: text in, bytes out (the new tokens, then a newline).
"$FSDP" sample --init-from "$tmp/bytes" --prompt "Hi there" --max-new-tokens 12 >"$tmp/out" 2>"$tmp/err"
[ "$(wc -c <"$tmp/out")" -eq 13 ] && ok "a byte model prints 12 bytes" || fail "byte model: $(od -c "$tmp/out" | head -2)"

# llm.c's tokenizer file: 256 uint32 (magic 20240328, version 2, 300 tokens, end of text 0),
# then token i as a length byte and the text "[i]".
le32() { printf "\\$(printf %03o $(($1 & 255)))\\$(printf %03o $((($1 >> 8) & 255)))\\$(printf %03o $((($1 >> 16) & 255)))\\$(printf %03o $((($1 >> 24) & 255)))"; }
{ le32 20240328; le32 2; le32 300; le32 0; head -c 1008 /dev/zero; } >"$tmp/tok.bin"
i=0
while [ $i -lt 300 ]; do text="[$i]"; printf "\\$(printf %03o ${#text})%s" "$text"; i=$((i + 1)); done >>"$tmp/tok.bin"
want=$(echo "$greedy" | sed 's/\([0-9]*\)/[\1]/g; s/ //g')
got=$(sample --temperature 0 --tokenizer "$tmp/tok.bin")
[ "$got" = "$want" ] && ok "--tokenizer prints each token's text" || fail "tokenizer: '$got', expected '$want'"

# expect_error NAME TEXT ARGS...: `fsdp sample ARGS` fails and its stderr contains TEXT.
expect_error() {
  name=$1 want=$2
  shift 2
  $LAUNCH "$FSDP" sample "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  rc=$?
  if [ "$rc" -ne 0 ] && grep -qF -- "$want" "$tmp/stderr"; then
    ok "$name"
  else
    fail "$name: exit $rc, expected '$want' in stderr: $(head -n 3 "$tmp/stderr")"
  fi
}
M="--init-from $tmp/m"
expect_error "no prompt" "--prompt or --prompt-tokens is required" $M
expect_error "both prompts" "give one of them" $M --prompt hi --prompt-tokens 1
expect_error "--max-new-tokens 0" "--max-new-tokens: must be a positive integer" $M --prompt-tokens 1 --max-new-tokens 0
expect_error "a prompt of max_seq_len" "--prompt-tokens: 32 tokens leave no room" $M \
  --prompt-tokens 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32
expect_error "a token id of vocab_size" "--prompt-tokens: token id 300 is not below the model's vocab size 300" $M \
  --prompt-tokens 1,300
expect_error "a negative id" "--prompt-tokens: must be a non-negative integer" $M --prompt-tokens 1,-2
expect_error "an empty id" "--prompt-tokens: '1,,2' is not a comma-separated list" $M --prompt-tokens 1,,2
expect_error "text on a 300-token model" "--prompt: text is read as bytes" $M --prompt hello
expect_error "a text prompt of max_seq_len" "--prompt: 40 tokens leave no room" --init-from "$tmp/bytes" \
  --prompt "0123456789012345678901234567890123456789"
expect_error "no tokenizer file" "--tokenizer '$tmp/none': No such file" $M --prompt-tokens 1 --tokenizer "$tmp/none"
{ le32 20240520; head -c 1020 /dev/zero; } >"$tmp/bad_magic.bin"
expect_error "a tokenizer's magic" "--tokenizer '$tmp/bad_magic.bin' is neither a Hugging Face tokenizer.json" $M --prompt-tokens 1 \
  --tokenizer "$tmp/bad_magic.bin"
head -c 1500 "$tmp/tok.bin" >"$tmp/short.bin"
expect_error "a truncated tokenizer" "--tokenizer $tmp/short.bin: ends" $M --prompt-tokens 1 --tokenizer "$tmp/short.bin"
head -c 100 "$tmp/tok.bin" >"$tmp/header.bin"
expect_error "a tokenizer without its header" "shorter than the tokenizer header" $M --prompt-tokens 1 \
  --tokenizer "$tmp/header.bin"
# A count the file cannot hold is refused before anything is allocated for it (a fuzz
# finding: 2^31 - 1 tokens asked for 16 GiB of lengths and pointers).
{ le32 20240328; le32 2; le32 2147483647; le32 0; head -c 1012 /dev/zero; } >"$tmp/huge.bin"
expect_error "a tokenizer's vocabulary its file cannot hold" \
  "--tokenizer $tmp/huge.bin: a vocabulary of 2147483647 tokens in a file of 1028 bytes" $M --prompt-tokens 1 \
  --tokenizer "$tmp/huge.bin"
{ cat "$tmp/tok.bin"; printf x; } >"$tmp/long.bin"
expect_error "bytes after a tokenizer's tokens" "bytes after the last of its 300 tokens" $M --prompt-tokens 1 \
  --tokenizer "$tmp/long.bin"
LAUNCH="$MPIRUN -np 2" expect_error "two ranks" "fsdp sample runs on one rank, not 2" $M --prompt-tokens 1

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
