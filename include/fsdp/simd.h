/* The vector instructions the CPU code may use, chosen at run time: AVX-512 (F) where
 * the CPU and the OS have it, with its BF16 dot products (and BW) where it has those too,
 * else scalar C. Code with an AVX-512 path keeps a scalar twin that performs the same
 * floating-point operations in the same order for every element, so that the choice
 * changes the speed and never a bit of a result. The one exception is attention's bf16
 * tile products (src/nn/cpu/tile_product.h): below SIMD_AVX512_BF16 they run on oneDNN's
 * matmul, whose fp32 sums go in an order of its own. FSDP_SIMD=scalar in
 * the environment (read once) holds a whole run to the scalar code; simd_limit does it
 * for a test. */
#ifndef FSDP_SIMD_H
#define FSDP_SIMD_H

enum simd_isa { SIMD_SCALAR, SIMD_AVX512, SIMD_AVX512_BF16 };

/* The best the CPU has, at most the limit set. */
enum simd_isa simd_isa(void);
/* From now on simd_isa returns at most isa. */
void simd_limit(enum simd_isa isa);

#endif
