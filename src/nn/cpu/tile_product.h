/* Private to src/nn/cpu: the 16-bit products of attention's tiles on the CPU's own vector
 * instructions, for a thread that runs many small products in a row: a call of oneDNN's
 * matmul costs microseconds of dispatch besides its sums, as much as a 64 x 256 x 64
 * product itself (docs/benchmarks.md). tile_product.c. */
#ifndef FSDP_NN_CPU_TILE_PRODUCT_H
#define FSDP_NN_CPU_TILE_PRODUCT_H

#include <stdint.h>

#include "fsdp/dtype.h"

/* A product's operand: the matrix whose rows start at data, ld elements apart, or, where
 * transposed, the transpose of that matrix. */
struct operand {
  const void *data;
  int64_t ld;
  int transposed;
};

/* Whether tile_product runs here: simd_isa() at least SIMD_AVX2 (fsdp/simd.h); below, the
 * attention's 16-bit products run on oneDNN, whose fp32 sums go in an order of its own. */
int tile_product_runs(void);

/* c (m x n fp32, rows ldc apart) = a b, or c += a b where accumulate, for a (m x k) and
 * b (k x n) in d, bf16 or fp16. Each element's sum is fp32 and runs over k in order, two
 * terms a step as AVX-512 BF16's vdpbf16ps adds them (the odd term, then the even one,
 * each product exact), from 0, with its subnormals flushed to 0; an accumulating product
 * adds the sum to c once. So an element's bits depend on its row of a, its column of b
 * and k alone, never on m, n, the operands' layouts or the instruction set: vdpbf16ps
 * itself for bf16 where the CPU has it, fused multiply-adds on widened values (AVX2)
 * otherwise. The packed operands go in the thread's cpu_pack_scratch. */
void tile_product(enum dtype d, int m, int n, int k, struct operand a, struct operand b, int accumulate, float *c,
                  int ldc);

#endif
