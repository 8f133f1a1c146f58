/* Private to src/nn/cpu: what the kernels' AVX2 paths share (lanes.c, exp_row.c,
 * tile_product.c). Only for simd_isa() at least SIMD_AVX2 (fsdp/simd.h), on x86-64. */
#ifndef FSDP_NN_CPU_AVX2_H
#define FSDP_NN_CPU_AVX2_H

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))

/* The mask of a vector's first n lanes, as maskload and maskstore take it (none for
 * n <= 0, all for n >= 8). */
AVX2 static inline __m256i first8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* r[0..7] in place: r[j] becomes the vector of element j of each of the eight. */
AVX2 static inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; i++) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; i++) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int j = 0; j < 4; j++) {
    r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}

#endif
