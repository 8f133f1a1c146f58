/* The vector instructions the CPU code may use, chosen at run time from what the CPU and
 * the OS have: AVX2 (with FMA and F16C: x86-64-v3), AVX-512 (F, BW, DQ, VL: x86-64-v4),
 * AVX-512 with its BF16 dot products, else scalar C (every other CPU, aarch64 among them). Code with a vector path
 * keeps a scalar twin that performs the same floating-point operations in the same order
 * for every element, so that the choice changes the speed and never a bit of a result.
 * FSDP_SIMD=scalar|avx2|avx512|avx512_bf16 in the environment (read once) caps a whole
 * run; simd_limit does it for a test. */
#ifndef FSDP_SIMD_H
#define FSDP_SIMD_H

enum simd_isa { SIMD_SCALAR, SIMD_AVX2, SIMD_AVX512, SIMD_AVX512_BF16 };

/* The best the CPU has, at most the caps set. */
enum simd_isa simd_isa(void);
/* From now on simd_isa returns at most isa. */
void simd_limit(enum simd_isa isa);
/* "scalar", "avx2", "avx512", "avx512_bf16": FSDP_SIMD's words. */
const char *simd_isa_name(enum simd_isa isa);

/* A loop written once in C and compiled for each instruction set, for code whose
 * vectorized form the compiler finds itself (elementwise loops: without contraction into
 * fused multiply-adds, as this C11 build compiles, each element's operations are the
 * written ones on every path, so the clones give the same bits). SIMD_CLONES(static void
 * f, (params), body;) defines f_scalar, and on x86-64 f_avx2 and f_avx512, each running
 * body (the loop, or the call of an always_inline function holding it); SIMD_CLONE(f) is
 * the one for simd_isa(). */
#if defined(__x86_64__)
#define SIMD_TARGET_AVX2 __attribute__((target("avx2,fma,f16c")))
#define SIMD_TARGET_AVX512 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl")))
#define SIMD_CLONES(decl, params, body)       \
  decl##_scalar params { body; }              \
  SIMD_TARGET_AVX2 decl##_avx2 params { body; } \
  SIMD_TARGET_AVX512 decl##_avx512 params { body; }
#define SIMD_CLONE(f) \
  (simd_isa() >= SIMD_AVX512 ? f##_avx512 : simd_isa() >= SIMD_AVX2 ? f##_avx2 : f##_scalar)
#else
#define SIMD_CLONES(decl, params, body) decl##_scalar params { body; }
#define SIMD_CLONE(f) f##_scalar
#endif

#endif
