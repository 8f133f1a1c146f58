#!/bin/sh
# The GPU's training step through the ops' contracts, without a GPU: `fsdp plan --device
# cuda` runs two real training steps on the meta device, and every op they launch is
# checked against its contract (src/nn/contract.c) with the cuda backend's compute dtypes
# before it is dropped. So a step the GPU would refuse fails here, as the first GPU run's
# bf16 loss sum (2026-11-26, commit 4f12aef) would have. Both models, every parameter
# dtype, and the paths that change which ops run: sharding strategies, 16-bit reduction,
# activation checkpointing, gradient accumulation in both modes, CPU offload, HSDP, one
# unit, and gradient clipping off.
# Usage: contract_walk_test.sh path/to/fsdp
FSDP=${1:?usage: contract_walk_test.sh path/to/fsdp}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT

GPT2="--model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 4 --vocab-size 96 --block-size 32"
LLAMA="--model llama3-debug --n-layer 2 --n-embd 64 --n-head 4 --n-kv-head 2 --ffn-hidden 96 --vocab-size 96 \
--block-size 32"
SHAPE="--seq-len 32 --batch-size 2"

failures=0 walks=0
walk() {
  walks=$((walks + 1))
  # shellcheck disable=SC2068
  if ! "$FSDP" plan --device cuda $@ > "$tmp/out" 2>&1; then
    echo "FAIL: fsdp plan --device cuda $*"
    sed 's/^/  /' "$tmp/out"
    failures=$((failures + 1))
  fi
}

for model in gpt2 llama; do
  if [ $model = gpt2 ]; then flags=$GPT2; else flags=$LLAMA; fi
  for dtype in fp32 bf16 fp16; do
    base="$flags $SHAPE --param-dtype $dtype"
    walk $base --world-size 1
    walk $base --world-size 2 --sharding grad-op
    walk $base --world-size 2 --sharding none
    walk $base --world-size 4 --ac full --grad-accum 2
    walk $base --world-size 2 --grad-accum 2 --accum-mode no-sync --grad-clip 0
    walk $base --world-size 2 --offload cpu --wrap none
    walk $base --world-size 4 --mesh 2,2
    [ $dtype = fp32 ] || walk $base --world-size 2 --reduce-dtype bf16
  done
done
echo "contract_walk_test: $walks walks, $failures failed"
[ $failures -eq 0 ]
