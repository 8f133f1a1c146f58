/* The vector instructions the CPU code may use, chosen at run time: AVX-512 (F) where
 * the CPU and the OS have it, else scalar C. Code with an AVX-512 path keeps a scalar twin
 * that performs the same floating-point operations in the same order for every element,
 * so that the choice changes the speed and never a bit of a result. FSDP_SIMD=scalar in
 * the environment (read once) holds a whole run to the scalar code; simd_limit does it
 * for a test. */
#ifndef FSDP_SIMD_H
#define FSDP_SIMD_H

enum simd_isa { SIMD_SCALAR, SIMD_AVX512 };

/* The best the CPU has, at most the limit set. */
enum simd_isa simd_isa(void);
/* From now on simd_isa returns at most isa. */
void simd_limit(enum simd_isa isa);

#endif
