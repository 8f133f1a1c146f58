#include "fsdp/dtype.h"

#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "fsdp/error.h"
#include "fsdp/simd.h"

static const char *const NAMES[] = {[DTYPE_F32] = "fp32", [DTYPE_BF16] = "bf16", [DTYPE_F16] = "fp16",
                                    [DTYPE_I32] = "int32", [DTYPE_F64] = "fp64"};
enum { NUM_DTYPES = sizeof NAMES / sizeof NAMES[0], NUM_PARAM_DTYPES = DTYPE_F16 + 1 };
static const size_t SIZES[] = {[DTYPE_F32] = 4, [DTYPE_BF16] = 2, [DTYPE_F16] = 2, [DTYPE_I32] = 4, [DTYPE_F64] = 8};

static void check_dtype(enum dtype d, const char *caller) {
  if ((unsigned)d >= NUM_DTYPES) fsdp_fatal("%s: unknown dtype %d", caller, (int)d);
}

static void check_16bit(enum dtype d, const char *caller) {
  if (d != DTYPE_BF16 && d != DTYPE_F16)
    fsdp_fatal("%s: dtype %d is not bf16 or fp16", caller, (int)d);
}

size_t dtype_size(enum dtype d) {
  check_dtype(d, "dtype_size");
  return SIZES[d];
}

const char *dtype_name(enum dtype d) {
  check_dtype(d, "dtype_name");
  return NAMES[d];
}

int dtype_parse(const char *name) {
  for (int d = 0; d < NUM_PARAM_DTYPES; d++)
    if (strcmp(name, NAMES[d]) == 0) return d;
  return -1;
}

static float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static const uint32_t F32_ABS = 0x7fffffffu, F32_INF = 0x7f800000u;

/* Adding half an output ulp less one, plus the kept lowest bit, carries into the
 * kept bits exactly when the dropped ones are above half, or at half with the kept
 * part odd: round to nearest even in one add (the carry may run on into the exponent,
 * which is right, and from the largest finite value on to infinity). */
static uint32_t round_shift(uint32_t u, uint32_t shift) {
  return (u + ((1u << (shift - 1)) - 1) + ((u >> shift) & 1u)) >> shift;
}

/* The conversions work on fp32 bit patterns. Each computes every candidate result and
 * selects one, so that the loops over them vectorize. */

static uint16_t bf16_of_bits(uint32_t u) {
  /* A NaN would round into the infinities, or (its payload all in the dropped bits) be one. */
  uint32_t quiet_nan = (u >> 16) | 0x0040u, rounded = round_shift(u, 16);
  return (uint16_t)((u & F32_ABS) > F32_INF ? quiet_nan : rounded);
}

/* binary16: exponent bias 15 against fp32's 127; 10 stored significand bits against 23. */
static const uint32_t F16_REBIAS = 112u << 23;
static const uint32_t F32_OF_F16_MIN_NORMAL = 0x38800000u; /* 2^-14 */
/* 65520, halfway between the largest finite binary16 (65504) and 2^16: it and all above
 * round to infinity (to even: 65504's significand is odd). */
static const uint32_t F32_OF_F16_OVERFLOW = 0x477ff000u;

static uint16_t f16_of_bits(uint32_t u) {
  uint32_t a = u & F32_ABS;
  uint32_t quiet_nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  uint32_t normal = round_shift(a - F16_REBIAS, 13);
  /* A subnormal result counts units of 2^-24. An fp32 number of exponent field e (at most
   * 112, below binary16's normal range) is its significand (with the leading one when
   * e > 0) times 2^(e - 150), or that count times 2^(e - 126): 14 shifts or more. From 25
   * on the result is 0 (the significand is below half a unit); 31 keeps the shift defined. */
  uint32_t e = a >> 23 < 112 ? a >> 23 : 112;
  uint32_t significand = e ? (a & 0x7fffffu) | 0x800000u : a;
  uint32_t shift = e ? 126 - e : 125;
  uint32_t subnormal = round_shift(significand, shift < 31 ? shift : 31);
  uint32_t magnitude = a > F32_INF                   ? quiet_nan
                       : a >= F32_OF_F16_OVERFLOW   ? 0x7c00u
                       : a >= F32_OF_F16_MIN_NORMAL ? normal
                                                    : subnormal;
  return (uint16_t)(((u >> 16) & 0x8000u) | magnitude);
}

static uint32_t bits_of_f16(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  /* Infinities and NaNs (e = 31) move to fp32's top exponent, 255. */
  uint32_t rebias = e == 0x1f ? (255u - 31u) << 23 : F16_REBIAS;
  uint32_t normal = ((e << 23) | (m << 13)) + rebias;
  /* e = 0: m units of 2^-24, exact, and a normal fp32 number. */
  float subnormal_value = (float)m * 0x1p-24f;
  uint32_t subnormal;
  memcpy(&subnormal, &subnormal_value, sizeof subnormal);
  /* A mask, not ?:, which GCC turns into a branch around the multiply (it may trap), and
   * then does not vectorize. */
  uint32_t is_normal = -(uint32_t)(e != 0);
  return sign | (normal & is_normal) | (subnormal & ~is_normal);
}

uint16_t f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return bf16_of_bits(u);
}

float bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

uint16_t f32_to_f16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return f16_of_bits(u);
}

float f16_to_f32(uint16_t h) { return float_of(bits_of_f16(h)); }

/* One loop per format, so that each vectorizes on its own: bf16's (shifts and a select)
 * for each instruction set (fsdp/simd.h's clones). */

SIMD_CLONES(static void pack_bf16, (const float *restrict src, uint16_t *restrict dst, size_t n),
            for (size_t i = 0; i < n; i++) dst[i] = f32_to_bf16(src[i]))

SIMD_CLONES(static void unpack_bf16, (const uint16_t *restrict src, float *restrict dst, size_t n),
            for (size_t i = 0; i < n; i++) dst[i] = bf16_to_f32(src[i]))

static void pack_f16_scalar(const float *restrict src, uint16_t *restrict dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = f32_to_f16(src[i]);
}

static void unpack_f16_scalar(const uint16_t *restrict src, float *restrict dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = f16_to_f32(src[i]);
}

/* fp16 on AVX2 and AVX-512 (fsdp/simd.h): the F16C conversions give the bits of the loops
 * above for every input (dtype_test tries all 2^32 fp32 and 2^16 fp16 patterns), but for
 * the widening of a signalling NaN, which vcvtph2ps makes quiet and these keep as it is:
 * exponent 31 takes the integer steps of bits_of_f16 instead. The compiler's own vectors
 * of those loops, with their subnormal and overflow cases, run 4-5x slower than the
 * instructions. */
#if defined(__x86_64__)
SIMD_TARGET_AVX512 static void pack_f16_avx512(const float *restrict src, uint16_t *restrict dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  pack_f16_scalar(src + i, dst + i, n - i);
}

SIMD_TARGET_AVX512 static void unpack_f16_avx512(const uint16_t *restrict src, float *restrict dst, size_t n) {
  const __m512i exponent = _mm512_set1_epi32(0x7c00), sign = _mm512_set1_epi32(0x8000);
  const __m512i significand = _mm512_set1_epi32(0x3ff), f32_top_exponent = _mm512_set1_epi32((int)F32_INF);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256((const __m256i *)(src + i));
    __m512i w = _mm512_cvtepu16_epi32(h);
    __mmask16 top = _mm512_cmpeq_epi32_mask(_mm512_and_si512(w, exponent), exponent);
    __m512i infinite_or_nan = _mm512_or_si512(
        _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(w, sign), 16), f32_top_exponent),
        _mm512_slli_epi32(_mm512_and_si512(w, significand), 13));
    __m512 x = _mm512_mask_mov_ps(_mm512_cvtph_ps(h), top, _mm512_castsi512_ps(infinite_or_nan));
    _mm512_storeu_ps(dst + i, x);
  }
  unpack_f16_scalar(src + i, dst + i, n - i);
}

SIMD_TARGET_AVX2 static void pack_f16_avx2(const float *restrict src, uint16_t *restrict dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  pack_f16_scalar(src + i, dst + i, n - i);
}

SIMD_TARGET_AVX2 static void unpack_f16_avx2(const uint16_t *restrict src, float *restrict dst, size_t n) {
  const __m256i exponent = _mm256_set1_epi32(0x7c00), sign = _mm256_set1_epi32(0x8000);
  const __m256i significand = _mm256_set1_epi32(0x3ff), f32_top_exponent = _mm256_set1_epi32((int)F32_INF);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
    __m256i w = _mm256_cvtepu16_epi32(h);
    __m256i top = _mm256_cmpeq_epi32(_mm256_and_si256(w, exponent), exponent);
    __m256i infinite_or_nan = _mm256_or_si256(
        _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, sign), 16), f32_top_exponent),
        _mm256_slli_epi32(_mm256_and_si256(w, significand), 13));
    __m256 x = _mm256_blendv_ps(_mm256_cvtph_ps(h), _mm256_castsi256_ps(infinite_or_nan), _mm256_castsi256_ps(top));
    _mm256_storeu_ps(dst + i, x);
  }
  unpack_f16_scalar(src + i, dst + i, n - i);
}
#define F16_PATH(f) (simd_isa() >= SIMD_AVX512 ? f##_avx512 : simd_isa() >= SIMD_AVX2 ? f##_avx2 : f##_scalar)
#else
#define F16_PATH(f) f##_scalar
#endif

typedef void (*pack_loop)(const float *restrict, uint16_t *restrict, size_t);
typedef void (*unpack_loop)(const uint16_t *restrict, float *restrict, size_t);

static pack_loop pack_of(enum dtype d) { return d == DTYPE_BF16 ? SIMD_CLONE(pack_bf16) : F16_PATH(pack_f16); }
static unpack_loop unpack_of(enum dtype d) {
  return d == DTYPE_BF16 ? SIMD_CLONE(unpack_bf16) : F16_PATH(unpack_f16);
}

void dtype_pack(enum dtype d, const float *src, uint16_t *dst, size_t n) {
  check_16bit(d, "dtype_pack");
  pack_of(d)(src, dst, n);
}

void dtype_unpack(enum dtype d, const uint16_t *src, float *dst, size_t n) {
  check_16bit(d, "dtype_unpack");
  unpack_of(d)(src, dst, n);
}

void dtype_pack_rows(enum dtype d, const float *src, size_t src_stride, uint16_t *dst, size_t dst_stride, size_t rows,
                     size_t cols) {
  check_16bit(d, "dtype_pack_rows");
  pack_loop pack = pack_of(d);
  for (size_t r = 0; r < rows; r++) pack(src + r * src_stride, dst + r * dst_stride, cols);
}

void dtype_unpack_rows(enum dtype d, const uint16_t *src, size_t src_stride, float *dst, size_t dst_stride,
                       size_t rows, size_t cols) {
  check_16bit(d, "dtype_unpack_rows");
  unpack_loop unpack = unpack_of(d);
  for (size_t r = 0; r < rows; r++) unpack(src + r * src_stride, dst + r * dst_stride, cols);
}

/* The in-place conversions and fp16's rounding go a block at a time through a buffer on
 * the stack, where the loops above vectorize (an element at a time, GCC sees the overlap
 * and does not: 2-3x slower). The 16-bit side is moved by memcpy, so no byte is read
 * with a type other than the one it was last written with. */
enum { BLOCK = 2048 };

/* bf16's rounding in place, each float to the float of its bf16: a bf16 is a float's top
 * half, so one loop, which vectorizes (the attention rounds rows of 64: a block's two
 * passes and calls cost more than the work). */
static inline __attribute__((always_inline)) void round_bf16_elements(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, x + i, sizeof u);
    x[i] = float_of((uint32_t)bf16_of_bits(u) << 16);
  }
}

SIMD_CLONES(static void round_bf16, (float *x, size_t n), round_bf16_elements(x, n))

void dtype_round(enum dtype d, float *x, size_t n) {
  check_dtype(d, "dtype_round");
  if (d == DTYPE_BF16) SIMD_CLONE(round_bf16)(x, n);
  if (d != DTYPE_F16) return;
  uint16_t block[BLOCK];
  for (size_t s = 0; s < n; s += BLOCK) {
    size_t m = n - s < BLOCK ? n - s : BLOCK;
    dtype_pack(d, x + s, block, m);
    dtype_unpack(d, block, x + s, m);
  }
}

/* Block [s, s+m) is read (as floats, bytes [4s, 4s+4m)) before its 16-bit values are
 * written to bytes [2s, 2s+2m). Those end at 2s+2m <= 4s+4m, in blocks already read, and
 * the next block starts at 4(s+m), above them: no float is overwritten before it is read. */
void dtype_pack_in_place(enum dtype d, float *buf, size_t n) {
  check_16bit(d, "dtype_pack_in_place");
  unsigned char *bytes = (unsigned char *)buf;
  uint16_t block[BLOCK];
  for (size_t s = 0; s < n; s += BLOCK) {
    size_t m = n - s < BLOCK ? n - s : BLOCK;
    dtype_pack(d, buf + s, block, m);
    memcpy(bytes + 2 * s, block, 2 * m);
  }
}

/* Block [s, s+m) of 16-bit values (bytes [2n+2s, 2n+2s+2m)) is copied out before its
 * floats are written to bytes [4s, 4s+4m). Those end at 4s+4m <= 2n+2s+2m (as s+m <= n),
 * the end of the block's own values: only values already copied out are overwritten. */
void dtype_unpack_upper_in_place(enum dtype d, float *buf, size_t n) {
  check_16bit(d, "dtype_unpack_upper_in_place");
  const unsigned char *bytes = (const unsigned char *)buf;
  uint16_t block[BLOCK];
  for (size_t s = 0; s < n; s += BLOCK) {
    size_t m = n - s < BLOCK ? n - s : BLOCK;
    memcpy(block, bytes + 2 * n + 2 * s, 2 * m);
    dtype_unpack(d, block, buf + s, m);
  }
}
