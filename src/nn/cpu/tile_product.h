/* Private to src/nn/cpu: the bf16 products of attention's tiles on the CPU's own BF16 dot
 * products (AVX-512 BF16's vdpbf16ps), for a thread that runs many small products in a
 * row: a call of oneDNN's matmul costs microseconds of dispatch besides its sums, as much
 * as a 64 x 256 x 64 product itself (docs/benchmarks.md). tile_product.c. */
#ifndef FSDP_NN_CPU_TILE_PRODUCT_H
#define FSDP_NN_CPU_TILE_PRODUCT_H

#include <stdint.h>

/* A product's operand: the matrix whose rows start at data, ld elements apart, or, where
 * transposed, the transpose of that matrix. */
struct operand {
  const void *data;
  int64_t ld;
  int transposed;
};

/* Whether tile_product_bf16 runs here: simd_isa() at least SIMD_AVX512_BF16. */
int tile_product_bf16_runs(void);

/* c (m x n fp32, rows ldc apart) = a b, or c += a b where accumulate, for a (m x k) and
 * b (k x n) bf16. Each element's sum is fp32 and runs over k in order, two terms a step
 * as vdpbf16ps adds them (the odd term, then the even one, each product exact), from 0;
 * an accumulating product adds the sum to c once. So an element's bits depend on its
 * row of a, its column of b and k alone, never on m, n or the operands' layouts. The
 * packed operands go in the thread's cpu_pack_scratch. */
void tile_product_bf16(int m, int n, int k, struct operand a, struct operand b, int accumulate, float *c, int ldc);

#endif
