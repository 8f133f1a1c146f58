/* Checks the dtype conversions on their own (names, hand-worked values, every 16-bit
 * pattern round-tripping, the in-place conversions against the out-of-place ones), then
 * writes inputs and results to a file for dtype_check.py, which recomputes every
 * conversion with PyTorch. The inputs are fp32 bit patterns: every rounding boundary of
 * both 16-bit formats (each representable value, and the midpoint to the next one with
 * its two fp32 neighbours), special values, and random patterns over all exponents.
 * fp16's AVX-512 conversions (fsdp/simd.h) must give the scalar loops' bits on every
 * fp32 pattern and every 16-bit one. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/dtype.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/rng.h"
#include "fsdp/simd.h"
#include "tensor_file.h"

static const uint64_t SEED = 4321;
static const enum dtype HALVES[] = {DTYPE_BF16, DTYPE_F16};

static float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static uint16_t narrow(enum dtype d, float x) { return d == DTYPE_BF16 ? f32_to_bf16(x) : f32_to_f16(x); }
static float widen(enum dtype d, uint16_t h) { return d == DTYPE_BF16 ? bf16_to_f32(h) : f16_to_f32(h); }

static void check_names(void) {
  static const struct {
    enum dtype d;
    size_t size;
    const char *name;
  } want[] = {{DTYPE_F32, 4, "fp32"}, {DTYPE_BF16, 2, "bf16"}, {DTYPE_F16, 2, "fp16"}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    FSDP_CHECK(dtype_size(want[i].d) == want[i].size);
    FSDP_CHECK(strcmp(dtype_name(want[i].d), want[i].name) == 0);
    FSDP_CHECK(dtype_parse(want[i].name) == (int)want[i].d);
  }
  FSDP_CHECK(dtype_parse("BF16") == -1 && dtype_parse("fp64") == -1 && dtype_parse("") == -1);
  FSDP_CHECK(dtype_parse("bf16 ") == -1 && dtype_parse("fp1") == -1);
}

/* Worked out by hand from the formats, so that this test fails by itself on a wrong
 * rounding rule even where PyTorch is not run. */
static void check_known_values(void) {
  static const struct {
    enum dtype d;
    uint32_t in;
    uint16_t out;
  } cases[] = {
      {DTYPE_BF16, 0x3f800000u, 0x3f80u}, /* 1 */
      {DTYPE_BF16, 0x3f808000u, 0x3f80u}, /* 1 + 2^-8: halfway, to the even 1 */
      {DTYPE_BF16, 0x3f818000u, 0x3f82u}, /* 1 + 3 * 2^-8: halfway, to the even 1 + 2^-6 */
      {DTYPE_BF16, 0x3f808001u, 0x3f81u}, /* just above halfway */
      {DTYPE_BF16, 0x80000000u, 0x8000u}, /* -0 */
      {DTYPE_BF16, 0x00000001u, 0x0000u}, /* the smallest fp32 subnormal */
      {DTYPE_BF16, 0x00018000u, 0x0002u}, /* subnormal, halfway, to even */
      {DTYPE_BF16, 0x7f7fffffu, 0x7f80u}, /* FLT_MAX rounds to inf */
      {DTYPE_BF16, 0xff800000u, 0xff80u}, /* -inf */
      {DTYPE_F16, 0x3f800000u, 0x3c00u},  /* 1 */
      {DTYPE_F16, 0x477fe000u, 0x7bffu},  /* 65504, the largest finite */
      {DTYPE_F16, 0x477fefffu, 0x7bffu},  /* 65519.998 */
      {DTYPE_F16, 0x477ff000u, 0x7c00u},  /* 65520: halfway to 2^16, to even: inf */
      {DTYPE_F16, 0xc77ff000u, 0xfc00u},  /* -65520 */
      {DTYPE_F16, 0x38800000u, 0x0400u},  /* 2^-14, the smallest normal */
      {DTYPE_F16, 0x387fc000u, 0x03ffu},  /* 2^-14 - 2^-24, the largest subnormal */
      {DTYPE_F16, 0x387fe000u, 0x0400u},  /* halfway between those two: to the even normal */
      {DTYPE_F16, 0x387fdfffu, 0x03ffu},  /* just below halfway */
      {DTYPE_F16, 0x33800000u, 0x0001u},  /* 2^-24, the smallest subnormal */
      {DTYPE_F16, 0x33000000u, 0x0000u},  /* 2^-25: halfway to 0, to even 0 */
      {DTYPE_F16, 0x33000001u, 0x0001u},  /* just above */
      {DTYPE_F16, 0x33c00000u, 0x0002u},  /* 3 * 2^-25: halfway, to the even 2 */
      {DTYPE_F16, 0x00000001u, 0x0000u},  /* fp32 subnormal */
      {DTYPE_F16, 0x80000000u, 0x8000u},  /* -0 */
      {DTYPE_F16, 0x3f801000u, 0x3c00u},  /* 1 + 2^-11: halfway, to the even 1 */
      {DTYPE_F16, 0x3f803000u, 0x3c02u},  /* 1 + 3 * 2^-11: halfway, to the even 1 + 2^-9 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint16_t got = narrow(cases[i].d, float_of(cases[i].in));
    if (got != cases[i].out)
      fsdp_fatal("dtype_test: %s of fp32 0x%08x is 0x%04x, expected 0x%04x", dtype_name(cases[i].d),
                 (unsigned)cases[i].in, got, cases[i].out);
  }
}

static int is_nan16(enum dtype d, uint16_t h) {
  return d == DTYPE_BF16 ? (h & 0x7fffu) > 0x7f80u : (h & 0x7fffu) > 0x7c00u;
}

static int is_quiet_nan16(enum dtype d, uint16_t h) {
  return is_nan16(d, h) && (h & (d == DTYPE_BF16 ? 0x0040u : 0x0200u));
}

/* Every value of a format widens exactly and narrows back to itself; a NaN to a quiet NaN. */
static void check_round_trips(void) {
  for (size_t k = 0; k < 2; k++) {
    enum dtype d = HALVES[k];
    for (uint32_t h = 0; h <= 0xffffu; h++) {
      uint16_t back = narrow(d, widen(d, (uint16_t)h));
      int ok = is_nan16(d, (uint16_t)h) ? is_quiet_nan16(d, back) : back == h;
      if (!ok) fsdp_fatal("dtype_test: %s 0x%04x widened and narrowed is 0x%04x", dtype_name(d), (unsigned)h, back);
    }
  }
  float x[] = {1.0f, -3.5f, NAN, INFINITY};
  float before[sizeof x / sizeof x[0]];
  memcpy(before, x, sizeof x);
  dtype_round(DTYPE_F32, x, sizeof x / sizeof x[0]);
  FSDP_CHECK(memcmp(before, x, sizeof x) == 0);
}

/* The fp32 patterns the conversions are checked on (see the top of the file). */
static uint32_t *test_inputs(size_t *count) {
  enum { RANDOM = 500000 };
  static const uint32_t specials[] = {
      0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
      0xff800001u, 0x7f80ffffu, 0x7fbfffffu, 0x7fffffffu, 0x7f7fffffu, 0xff7fffffu, 0x00800000u,
      0x007fffffu, 0x00000001u, 0x80000001u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u,
      0x47800000u, 0x47ffe000u, 0x501502f9u /* 1e10 */, 0x477feffdu /* 65519.99 */};
  size_t n_specials = sizeof specials / sizeof specials[0];
  size_t cap = n_specials + 2 * 4 * 65536 + 2 * RANDOM + 4096;
  uint32_t *v = fsdp_xmalloc(cap * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < n_specials; i++) v[n++] = specials[i];
  /* bf16 value h and the midpoint to the next pattern, with its neighbours: the same bits
   * for either sign, as the magnitude is what is rounded. */
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    uint32_t mid = (h << 16) | 0x8000u;
    v[n++] = h << 16, v[n++] = mid - 1, v[n++] = mid, v[n++] = mid + 1;
  }
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    uint32_t magnitude = h & 0x7fffu;
    if (magnitude >= 0x7c00u) continue; /* inf, NaN: the specials have them */
    double lower = f16_to_f32((uint16_t)h), upper = magnitude == 0x7bffu ? copysign(65536.0, lower)
                                                                        : f16_to_f32((uint16_t)(h + 1));
    /* 12 significant bits: exact in fp32. */
    uint32_t mid = bits_of((float)((lower + upper) / 2));
    v[n++] = bits_of((float)lower), v[n++] = mid - 1, v[n++] = mid, v[n++] = mid + 1;
  }
  /* Uniform over all patterns, then with exponents from 2^-30 to 2^20, around fp16's range. */
  for (uint64_t i = 0; i < RANDOM; i++) {
    uint32_t r[4];
    philox4x32(SEED, 0, i, r);
    v[n++] = r[0];
    v[n++] = (r[1] & 0x807fffffu) | ((97u + r[2] % 51u) << 23);
  }
  /* fp32 subnormals, with more than one bit set. */
  for (uint32_t i = 0; i < 4096; i++) v[n++] = (i * 0x1fd3u) & 0x807fffffu;
  FSDP_CHECK(n <= cap);
  *count = n;
  return v;
}

static void write_u16(FILE *f, const char *name, const uint16_t *h, size_t n) {
  float *as_float = fsdp_xmalloc(n * sizeof *as_float);
  for (size_t i = 0; i < n; i++) as_float[i] = h[i]; /* exact below 2^24 */
  int dims[1] = {(int)n};
  tensor_file_write(f, name, as_float, 1, dims);
  free(as_float);
}

static void write_floats(FILE *f, const char *name, const float *x, size_t n) {
  int dims[1] = {(int)n};
  tensor_file_write(f, name, x, 1, dims);
}

/* dtype_pack_in_place against dtype_pack, dtype_unpack_upper_in_place against dtype_unpack,
 * to the bit, on the first n inputs (their bytes as 16-bit patterns for the unpacks). */
static void check_in_place(enum dtype d, const uint32_t *inputs, size_t n) {
  float *src = fsdp_xmalloc(n * sizeof *src), *buf = fsdp_xmalloc(n * sizeof *buf);
  uint16_t *packed = fsdp_xmalloc(n * sizeof *packed);
  float *unpacked = fsdp_xmalloc(n * sizeof *unpacked);
  memcpy(src, inputs, n * sizeof *src);
  uint16_t *values = fsdp_xmalloc(n * sizeof *values);
  memcpy(values, inputs, n * sizeof *values);

  dtype_pack(d, src, packed, n);
  memcpy(buf, src, n * sizeof *buf);
  dtype_pack_in_place(d, buf, n);
  if (memcmp(buf, packed, n * sizeof *packed) != 0)
    fsdp_fatal("dtype_test: %s dtype_pack_in_place differs from dtype_pack at n = %zu", dtype_name(d), n);

  dtype_unpack(d, values, unpacked, n);
  memset(buf, 0xa5, n * sizeof *buf);
  memcpy((unsigned char *)buf + 2 * n, values, n * sizeof *values);
  dtype_unpack_upper_in_place(d, buf, n);
  if (memcmp(buf, unpacked, n * sizeof *buf) != 0)
    fsdp_fatal("dtype_test: %s dtype_unpack_upper_in_place differs from dtype_unpack at n = %zu", dtype_name(d),
               n);
  free(src), free(buf), free(packed), free(unpacked), free(values);
}

/* dtype_pack_rows and dtype_unpack_rows against dtype_pack and dtype_unpack a row at a
 * time, to the bit: rows of cols elements taken every src_stride, put every dst_stride,
 * the elements between rows left as they were. */
static void check_rows(enum dtype d, const uint32_t *inputs, size_t rows, size_t cols, size_t src_stride,
                       size_t dst_stride) {
  size_t n_src = rows * src_stride, n_dst = rows * dst_stride;
  float *src = fsdp_xmalloc(n_src * sizeof *src), *wide = fsdp_xmalloc(n_dst * sizeof *wide);
  float *wide_want = fsdp_xmalloc(n_dst * sizeof *wide_want);
  uint16_t *narrow16 = fsdp_xmalloc(n_dst * sizeof *narrow16), *narrow_want = fsdp_xmalloc(n_dst * sizeof *narrow_want);
  uint16_t *values = fsdp_xmalloc(n_src * sizeof *values);
  memcpy(src, inputs, n_src * sizeof *src);
  memcpy(values, inputs, n_src * sizeof *values);
  memset(narrow16, 0x5a, n_dst * sizeof *narrow16), memset(narrow_want, 0x5a, n_dst * sizeof *narrow_want);
  memset(wide, 0x5a, n_dst * sizeof *wide), memset(wide_want, 0x5a, n_dst * sizeof *wide_want);
  for (size_t r = 0; r < rows; r++) {
    dtype_pack(d, src + r * src_stride, narrow_want + r * dst_stride, cols);
    dtype_unpack(d, values + r * src_stride, wide_want + r * dst_stride, cols);
  }
  dtype_pack_rows(d, src, src_stride, narrow16, dst_stride, rows, cols);
  dtype_unpack_rows(d, values, src_stride, wide, dst_stride, rows, cols);
  if (memcmp(narrow16, narrow_want, n_dst * sizeof *narrow16) != 0)
    fsdp_fatal("dtype_test: %s dtype_pack_rows differs from dtype_pack (%zu x %zu)", dtype_name(d), rows, cols);
  if (memcmp(wide, wide_want, n_dst * sizeof *wide) != 0)
    fsdp_fatal("dtype_test: %s dtype_unpack_rows differs from dtype_unpack (%zu x %zu)", dtype_name(d), rows, cols);
  free(src), free(wide), free(wide_want), free(narrow16), free(narrow_want), free(values);
}

/* Each vector path of the conversions (fsdp/simd.h: AVX2 and AVX-512, where this CPU has
 * them) against the scalar one, for bf16 and fp16: dtype_pack on all 2^32 fp32 patterns,
 * dtype_unpack on all 2^16 16-bit ones, and bf16's dtype_round (fp16's is the two in
 * turn), to the bit. Under a sanitizer, which makes the loops a hundred times slower, the
 * fp32 patterns are those of every 257th upper half (all exponents). */
static void check_simd_paths(void) {
  enum { CHUNK = 1 << 16 };
  enum simd_isa best = simd_isa();
  if (best == SIMD_SCALAR) {
    fsdp_log_info("dtype_test: this CPU has no AVX2; the conversions have their scalar path only");
    return;
  }
  const char *sanitizer = getenv("FSDP_SANITIZER");
  uint32_t stride = sanitizer && *sanitizer ? 257 : 1;
  float *x = fsdp_xmalloc(CHUNK * sizeof *x), *wide[2], *rounded[2];
  uint16_t *narrow_by[2], all[CHUNK];
  for (int p = 0; p < 2; p++) {
    wide[p] = fsdp_xmalloc(CHUNK * sizeof(float)), narrow_by[p] = fsdp_xmalloc(CHUNK * sizeof(uint16_t));
    rounded[p] = fsdp_xmalloc(CHUNK * sizeof(float));
  }
  for (uint32_t h = 0; h < CHUNK; h++) all[h] = (uint16_t)h;
  static const enum dtype DTYPES[] = {DTYPE_BF16, DTYPE_F16};
  for (enum simd_isa isa = SIMD_AVX2; isa <= best; isa++)
    for (size_t t = 0; t < sizeof DTYPES / sizeof DTYPES[0]; t++) {
      enum dtype d = DTYPES[t];
      for (uint32_t high = 0; high < CHUNK; high += stride) {
        for (uint32_t low = 0; low < CHUNK; low++) x[low] = float_of(high << 16 | low);
        for (int p = 0; p < 2; p++) {
          simd_limit(p == 0 ? isa : SIMD_SCALAR);
          dtype_pack(d, x, narrow_by[p], CHUNK);
          if (d == DTYPE_BF16) memcpy(rounded[p], x, CHUNK * sizeof(float)), dtype_round(d, rounded[p], CHUNK);
        }
        if (memcmp(narrow_by[0], narrow_by[1], CHUNK * sizeof(uint16_t)) != 0)
          fsdp_fatal("dtype_test: %s: dtype_pack's %s and scalar paths differ on 0x%04x....", dtype_name(d),
                     simd_isa_name(isa), (unsigned)high);
        if (d == DTYPE_BF16 && memcmp(rounded[0], rounded[1], CHUNK * sizeof(float)) != 0)
          fsdp_fatal("dtype_test: bf16: dtype_round's %s and scalar paths differ on 0x%04x....", simd_isa_name(isa),
                     (unsigned)high);
      }
      for (int p = 0; p < 2; p++) {
        simd_limit(p == 0 ? isa : SIMD_SCALAR);
        dtype_unpack(d, all, wide[p], CHUNK);
      }
      if (memcmp(wide[0], wide[1], CHUNK * sizeof(float)) != 0)
        fsdp_fatal("dtype_test: %s: dtype_unpack's %s and scalar paths differ", dtype_name(d), simd_isa_name(isa));
      fsdp_log_info("dtype_test: %s conversions on %s: the scalar path's bits", dtype_name(d), simd_isa_name(isa));
    }
  simd_limit(SIMD_AVX512_BF16);
  for (int p = 0; p < 2; p++) free(wide[p]), free(narrow_by[p]), free(rounded[p]);
  free(x);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT.bin\n", argv[0]);
    return 2;
  }
  check_names();
  check_known_values();
  check_round_trips();
  check_simd_paths();

  size_t n;
  uint32_t *inputs = test_inputs(&n);
  /* Sizes around the in-place conversions' blocks (2048) too, and up to several hundred
   * of them with a remainder. */
  static const size_t sizes[] = {0, 1, 2, 3, 17, 2047, 2048, 2049, 1000003};
  for (size_t k = 0; k < 2; k++)
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      FSDP_CHECK(sizes[s] <= n);
      check_in_place(HALVES[k], inputs, sizes[s]);
    }
  /* A head's slice of GPT-2's packed qkv (64 of 2304 a row), rows past the 16-wide
   * vectors' multiples, and no rows. */
  for (size_t k = 0; k < 2; k++) {
    check_rows(HALVES[k], inputs, 64, 64, 2304, 64);
    check_rows(HALVES[k], inputs, 7, 37, 40, 45);
    check_rows(HALVES[k], inputs, 0, 5, 5, 5);
  }

  FILE *f = tensor_file_create(argv[1]);
  float *x = fsdp_xmalloc(n * sizeof *x), *rounded = fsdp_xmalloc(n * sizeof *rounded);
  uint16_t *narrowed = fsdp_xmalloc(n * sizeof *narrowed), all[65536];
  float widened[65536];
  memcpy(x, inputs, n * sizeof *x);
  write_floats(f, "inputs", x, n);
  for (uint32_t h = 0; h <= 0xffffu; h++) all[h] = (uint16_t)h;
  for (size_t k = 0; k < 2; k++) {
    enum dtype d = HALVES[k];
    char name[64];
    for (size_t i = 0; i < n; i++) narrowed[i] = narrow(d, x[i]);
    snprintf(name, sizeof name, "%s/narrowed", dtype_name(d));
    write_u16(f, name, narrowed, n);

    /* The loops must agree with the scalar conversions they are built from. */
    uint16_t *packed = fsdp_xmalloc(n * sizeof *packed);
    dtype_pack(d, x, packed, n);
    FSDP_CHECK(memcmp(packed, narrowed, n * sizeof *packed) == 0);
    free(packed);

    memcpy(rounded, x, n * sizeof *x);
    dtype_round(d, rounded, n);
    snprintf(name, sizeof name, "%s/rounded", dtype_name(d));
    write_floats(f, name, rounded, n);

    dtype_unpack(d, all, widened, 65536);
    for (uint32_t h = 0; h <= 0xffffu; h++) FSDP_CHECK(bits_of(widened[h]) == bits_of(widen(d, (uint16_t)h)));
    snprintf(name, sizeof name, "%s/widened", dtype_name(d));
    write_floats(f, name, widened, 65536);
  }
  tensor_file_close(f);
  fsdp_log_info("dtype_test: names, hand-worked values, all 16-bit round trips, every vector path on every "
                "pattern and the in-place conversions pass; %zu inputs written to %s",
                n, argv[1]);
  free(inputs), free(x), free(rounded), free(narrowed);
  return 0;
}
