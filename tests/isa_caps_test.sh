#!/bin/sh
# The instruction-set caps a user (and CI) sets hold: FSDP_SIMD caps fsdp's own vector
# paths and DNNL_MAX_CPU_ISA oneDNN's, as `fsdp train` reports them and oneDNN's verbose
# log confirms; under the AVX2 cap (and below), a bf16 run's products are oneDNN's fp32
# ones on widened operands, and so they are uncapped on a CPU without AVX-512 BF16 (oneDNN
# would emulate bf16 there, 3.3 times slower than fp32), its own bf16 ones with it; the
# log's cpu: line names the engines; a bad FSDP_SIMD ends the run naming it.
# Usage: isa_caps_test.sh path/to/fsdp PYTHON SOURCE_DIR
. "$(dirname "$0")/train_test_setup.sh"

case $(uname -m) in
  x86_64) ;;
  *) echo "skipped: the caps are x86-64's"; exit 77 ;;
esac
has() { grep -qw "$1" /proc/cpuinfo; }
avx2=scalar
has avx2 && has fma && has f16c && avx2=avx2

run() {  # run FSDP_SIMD DNNL_MAX_CPU_ISA DTYPE: the output in $out
  out=$tmp/$1-$3.out
  FSDP_SIMD=$1 DNNL_MAX_CPU_ISA=$2 ONEDNN_VERBOSE=1 timeout 120 "$FSDP" train --model gpt2-tiny --n-layer 2 \
    --n-embd 64 --n-head 2 --seq-len 32 --batch-size 4 --steps 1 --data "$tmp/corpus.txt" --param-dtype "$3" \
    --peak-gflops 1 > "$out" 2>&1 || { tail -5 "$out"; echo "FAIL: FSDP_SIMD=$1 DNNL_MAX_CPU_ISA=$2 --param-dtype $3"; exit 1; }
}
expect() {  # expect WHAT PATTERN
  grep -q "$2" "$out" || { grep -E "^cpu:|isa:" "$out"; echo "FAIL: $1"; exit 1; }
}

for dtype in fp32 bf16; do
  run avx2 AVX2 "$dtype"
  expect "fsdp's paths capped to AVX2" "^cpu: $avx2 / oneDNN avx2,"
  expect "oneDNN capped to AVX2" "onednn_verbose,info,cpu,isa:Intel AVX2$"
  [ "$avx2" = avx2 ] && [ "$dtype" = bf16 ] && expect "attention on AVX2's tile_product" "attention's on tile_product avx2$"
  run scalar SSE41 "$dtype"
  expect "fsdp's paths capped to scalar" "^cpu: scalar / oneDNN sse41,"
  expect "oneDNN capped to SSE4.1" "onednn_verbose,info,cpu,isa:Intel SSE4.1$"
  [ "$dtype" = bf16 ] && expect "attention on oneDNN below AVX2" "products bf16 on oneDNN over fp32 copies, attention's on oneDNN matmul$"
done
# bf16 under the caps: no bf16 matmul in oneDNN below AVX-512, so fp32 ones on widened copies.
if grep "onednn_verbose,exec,cpu,matmul" "$out" | grep -q "src_bf16"; then
  echo "FAIL: a bf16 matmul ran under DNNL_MAX_CPU_ISA=SSE41"
  exit 1
fi
expect "bf16 products widened to fp32" "onednn_verbose,exec,cpu,matmul.*src_f32"
# Uncapped: oneDNN's own bf16 products where the CPU has AVX-512 BF16 (or AMX), fp32 ones
# on widened copies where it has not.
run "" "" bf16
if has avx512_bf16 || has amx_bf16; then
  expect "bf16 products on oneDNN" "products bf16 on oneDNN\( (AMX)\)\?,"
  expect "bf16 matmuls in bf16" "onednn_verbose,exec,cpu,matmul.*src_bf16"
else
  expect "bf16 products on fp32 copies without AVX-512 BF16" "products bf16 on oneDNN over fp32 copies,"
  if grep "onednn_verbose,exec,cpu,matmul" "$out" | grep -q "src_bf16"; then
    echo "FAIL: an emulated bf16 matmul ran on a CPU without AVX-512 BF16"
    exit 1
  fi
fi
status=0
FSDP_SIMD=avx1024 "$FSDP" train --model gpt2-tiny --steps 1 --data "$tmp/corpus.txt" > "$tmp/bad.out" 2>&1 || status=$?
[ "$status" -ne 0 ] && grep -q "FSDP_SIMD must be scalar, avx2, avx512 or avx512_bf16 (or unset), not 'avx1024'" \
  "$tmp/bad.out" || { cat "$tmp/bad.out"; echo "FAIL: a bad FSDP_SIMD (exit $status)"; exit 1; }
echo "caps: FSDP_SIMD and DNNL_MAX_CPU_ISA hold (this CPU: $avx2 and up), bf16 products widened below AVX-512"
