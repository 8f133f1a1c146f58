#!/bin/sh
# Every file fsdp reads, given something that is not a regular file — a FIFO, /dev/zero, a
# symlink to either, a directory — is refused within seconds, naming the path and what it
# is, with exit 1: never a hang in open(), never a read without bound. The readers: --data,
# `fsdp memviz`, --init-from (a safetensors file; a folder's config.json, model.safetensors
# and model.safetensors.index.json), a checkpoint's metadata.json and shard files
# (--checkpoint, --resume), and --tokenizer (sample's, train's, fsdp tokenize's; tokenize's
# inputs are tokenize_test.sh's). Growing and shrinking files are
# tests/input_file_test.c's: every reader goes through fsdp/input_file.h.
# Usage: special_files_test.sh path/to/fsdp
FSDP=${1:?usage: special_files_test.sh path/to/fsdp}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0

SHAPE="--model gpt2-tiny --n-layer 1 --n-embd 32 --n-head 2 --block-size 16 --vocab-size 256"
head -c 20000 /dev/urandom > "$tmp/data.txt"
"$FSDP" export $SHAPE -o "$tmp/model" > /dev/null 2>&1 &&
  "$FSDP" export $SHAPE --max-shard-size 10KB -o "$tmp/sharded" > /dev/null 2>&1 &&
  "$FSDP" train $SHAPE --data "$tmp/data.txt" --seq-len 16 --batch-size 2 --steps 2 --checkpoint-every 1 \
    --checkpoint-dir "$tmp/ckpt" > /dev/null 2>&1 || { echo "setup failed"; exit 1; }
step=$tmp/ckpt/step-00000001
mkfifo "$tmp/fifo" && mkdir "$tmp/dir" && ln -s /dev/zero "$tmp/to_zero" && ln -s "$tmp/fifo" "$tmp/to_fifo" || exit 2

# hostile KIND PATH: PATH becomes a thing of KIND; prints what fsdp should call it.
hostile() {
  rm -rf "$2"
  case $1 in
    fifo) mkfifo "$2"; echo "is a FIFO" ;;
    zero) ln -s /dev/zero "$2"; echo "is a character device" ;;
    fifo-link) ln -s "$tmp/fifo" "$2"; echo "is a FIFO" ;;
    dir) mkdir "$2"; echo "is a directory" ;;
  esac
}

# expect NAME WANT ARGS...: `fsdp ARGS` exits 1 within 20 s and its error contains WANT.
expect() {
  name=$1 want=$2
  shift 2
  timeout -k 5 20 "$FSDP" "$@" > "$tmp/out" 2>&1
  rc=$?
  if [ $rc -eq 1 ] && grep "fsdp: error:" "$tmp/out" | grep -qF -- "$want"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $rc (124: hung), expected 'fsdp: error: ...$want'"
    sed -n 1,5p "$tmp/out"
  fi
}

for path in "$tmp/fifo:is a FIFO" "/dev/zero:is a character device" "$tmp/to_zero:is a character device" \
  "$tmp/to_fifo:is a FIFO" "$tmp/dir:is a directory"; do
  p=${path%%:*} what=${path#*:}
  if [ "$p" = "$tmp/dir" ]; then # a folder is --data's other form: its .bin files
    expect "--data $p" "--data: the folder '$p' holds no .bin file" train $SHAPE --data "$p" --steps 1
  else
    expect "--data $p" "token file '$p': $what, not a regular file" train $SHAPE --data "$p" --steps 1
  fi
  expect "memviz $p" "memory snapshot '$p': $what, not a regular file" memviz "$p" -o "$tmp/page.html"
  expect "--tokenizer $p" "--tokenizer '$p': $what, not a regular file" sample --init-from "$tmp/model" \
    --prompt-tokens 1 --tokenizer "$p"
  expect "train --tokenizer $p" "--tokenizer '$p': $what, not a regular file" train $SHAPE --data "$tmp/data.txt" \
    --tokenizer "$p" --steps 1
  expect "tokenize --tokenizer $p" "--tokenizer '$p': $what, not a regular file" tokenize --tokenizer "$p" \
    -o "$tmp/tokens.bin" "$tmp/data.txt"
  [ "$p" = "$tmp/dir" ] && continue # a folder is --init-from's other form
  expect "--init-from $p" "safetensors file '$p': $what, not a regular file" eval --init-from "$p" \
    --data "$tmp/data.txt" --seq-len 16 --batches 1
done

for kind in fifo zero fifo-link dir; do
  cp -r "$tmp/model" "$tmp/m" && cp -r "$tmp/sharded" "$tmp/s" && cp -r "$step" "$tmp/c" || exit 2
  what=$(hostile $kind "$tmp/m/config.json")
  expect "config.json $kind" "--init-from config '$tmp/m/config.json': $what" eval --init-from "$tmp/m" \
    --data "$tmp/data.txt" --seq-len 16 --batches 1
  rm -rf "$tmp/m" && cp -r "$tmp/model" "$tmp/m"
  what=$(hostile $kind "$tmp/m/model.safetensors")
  expect "model.safetensors $kind" "safetensors file '$tmp/m/model.safetensors': $what" eval --init-from "$tmp/m" \
    --data "$tmp/data.txt" --seq-len 16 --batches 1
  what=$(hostile $kind "$tmp/s/model.safetensors.index.json")
  expect "index $kind" "safetensors index '$tmp/s/model.safetensors.index.json': $what" eval --init-from "$tmp/s" \
    --data "$tmp/data.txt" --seq-len 16 --batches 1
  what=$(hostile $kind "$tmp/c/metadata.json")
  expect "metadata.json $kind" "checkpoint metadata '$tmp/c/metadata.json': $what" eval --checkpoint "$tmp/c" \
    --data "$tmp/data.txt" --seq-len 16 --batches 1
  rm -rf "$tmp/c" && cp -r "$step" "$tmp/c"
  what=$(hostile $kind "$tmp/c/rank-00000.bin")
  expect "shard $kind --checkpoint" "'$tmp/c/rank-00000.bin': $what" eval --checkpoint "$tmp/c" \
    --data "$tmp/data.txt" --seq-len 16 --batches 1
  expect "shard $kind --resume" "'$tmp/c/rank-00000.bin': $what" train $SHAPE --data "$tmp/data.txt" --seq-len 16 \
    --batch-size 2 --steps 2 --checkpoint-dir "$tmp/ckpt2" --resume "$tmp/c"
  rm -rf "$tmp/m" "$tmp/s" "$tmp/c" "$tmp/ckpt2"
done
echo "special_files_test: $passed passed, $failed failed"
[ $failed -eq 0 ]
