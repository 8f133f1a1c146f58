#!/bin/sh
# One build runs on every x86-64 CPU (fsdp/simd.h): the fsdp built here trains under
# qemu-x86_64-static emulating a Haswell (AVX2, FMA, F16C, no AVX-512) in fp32, bf16 and
# fp16, and a Nehalem (SSE4.2, no AVX) in fp32 and fp16, each run naming the instruction
# sets it chose. On a host with AVX-512 this is what proves that no AVX-512 instruction
# runs outside the paths chosen for it: the emulator raises SIGILL on one, as a program
# built with -mavx512f shows first.
# Usage: portable_binary_test.sh path/to/fsdp PYTHON SOURCE_DIR
. "$(dirname "$0")/train_test_setup.sh"

case $(uname -m) in
  x86_64) ;;
  *) echo "skipped: not an x86-64 host"; exit 77 ;;
esac
# The sanitizers' runtimes map their shadow memory where the emulator cannot follow.
if [ -n "${FSDP_SANITIZER:-}" ]; then
  echo "skipped: the emulated CPUs run the build without sanitizers"
  exit 77
fi
QEMU=$(command -v qemu-x86_64-static) || { echo "FAIL: no qemu-x86_64-static (scripts/install-deps.sh)"; exit 1; }

cat > "$tmp/avx512.c" <<'C'
#include <immintrin.h>
#include <stdio.h>
int main(int argc, char **argv) {
  (void)argv;
  float x[16], y[16];
  for (int i = 0; i < 16; i++) x[i] = (float)(argc + i);
  _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_loadu_ps(x), _mm512_loadu_ps(x)));
  printf("%f\n", y[3]);
  return 0;
}
C
cc -O1 -mavx512f "$tmp/avx512.c" -o "$tmp/avx512"
status=0
"$QEMU" -cpu Haswell "$tmp/avx512" > /dev/null 2>&1 || status=$?
[ "$status" -eq 132 ] || { echo "FAIL: an AVX-512 program under the emulated Haswell exited $status, not SIGILL"; exit 1; }

run() {  # run CPU DTYPE ISA
  out=$tmp/$1-$2.out
  timeout 300 "$QEMU" -cpu "$1" "$FSDP" train --model gpt2-tiny --n-layer 2 --n-embd 64 --n-head 2 --seq-len 32 \
    --batch-size 4 --steps 2 --data "$tmp/corpus.txt" --param-dtype "$2" --peak-gflops 1 > "$out" 2>&1 ||
    { grep -v "TCG doesn't support" "$out" | tail -20; echo "FAIL: fsdp train --param-dtype $2 on an emulated $1"; exit 1; }
  grep -q "^cpu: $3," "$out" || { grep "^cpu:" "$out"; echo "FAIL: $1 did not run on $3"; exit 1; }
  grep -q "^step     2/2 | loss [0-9]" "$out" || { tail -5 "$out"; echo "FAIL: no second step on $1"; exit 1; }
  echo "$1 $2: $(grep '^cpu:' "$out"), $(grep '^step     2/2' "$out" | cut -d'|' -f2)"
}
for dtype in fp32 bf16 fp16; do run Haswell "$dtype" "avx2 / oneDNN avx2"; done
for dtype in fp32 fp16; do run Nehalem "$dtype" "scalar / oneDNN sse41"; done
