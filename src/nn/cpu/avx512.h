/* Private to src/nn/cpu: what the kernels' AVX-512 paths share (lanes.c, exp_row.c,
 * tile_product.c). Only for simd_isa() at least SIMD_AVX512 (fsdp/simd.h). */
#ifndef FSDP_NN_CPU_AVX512_H
#define FSDP_NN_CPU_AVX512_H

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* The mask of a vector's first n lanes (none for n <= 0, all for n >= 16). */
static inline __mmask16 first16(int n) { return n <= 0 ? 0 : n >= 16 ? 0xffffu : (__mmask16)((1u << n) - 1u); }

/* r[0..15] in place: r[j] becomes the vector of element j of each of the sixteen. */
AVX512 static inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
      t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

#endif
