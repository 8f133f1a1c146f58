/* The CPU attention's tile helpers (src/nn/cpu): exp_row and the 16-bit tile product, on
 * every instruction set this CPU has (fsdp/simd.h), each capped in turn.
 *   exp_row: within 2 ulp of exp (in double) where the result is a normal fp32 value, 0
 *     below -87 and for hidden keys, infinity above 89, NaN for NaN, and its row sum the
 *     documented pairwise sum, to the bit; every vector path and the scalar twin give the
 *     same bits.
 *   tile_product (from AVX2 up, AVX-512 and vdpbf16ps where the CPU has them): every
 *     element against the sum vdpbf16ps forms, written out in scalar C (odd term, then
 *     even, from 0, in fp32; these operands' products and sums stay far from subnormals),
 *     to the bit, in bf16 and fp16, for each layout of a and b, rows with odd strides and
 *     odd k, and with and without accumulation; and bf16 subnormal inputs read as zero,
 *     as vdpbf16ps reads them. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp_row.h"
#include "fsdp/dtype.h"
#include "fsdp/simd.h"
#include "tile_product.h"

static int checks, failures;
static uint64_t state = 20261127;

static void check(int ok, const char *what) {
  checks++;
  if (!ok) {
    failures++;
    fprintf(stderr, "FAIL: %s\n", what);
  }
}

static double uniform(void) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(state >> 11) / 9007199254740992.0;
}

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

/* |got - want| in units in the last place of the fp32 want. */
static double ulps(float got, double want) {
  int e;
  frexp(want, &e);
  return fabs((double)got - want) / ldexp(1.0, e - 24);
}

/* ---- exp_row ---- */

static float exp_on(enum simd_isa isa, float x) {
  simd_limit(isa);
  float row[1] = {x};
  exp_row(row, 1, 1, 1.0f, 0.0f);
  simd_limit(SIMD_AVX512_BF16);
  return row[0];
}

static void test_exp_values(enum simd_isa isa) {
  double worst = 0;
  for (int i = 0; i < 200000; i++) {
    float x = (float)(-87.0 + 176.0 * uniform());
    float got = exp_on(isa, x);
    double want = exp((double)x);
    if (want < ldexp(1.0, -126) || want > 3.4e38) continue;
    double u = ulps(got, want);
    worst = u > worst ? u : worst;
  }
  printf("exp (%s): worst %.2f ulp over normal results\n", simd_isa_name(isa), worst);
  check(worst <= 2.0, "exp within 2 ulp");
  check(exp_on(isa, 0.0f) == 1.0f, "exp(0) is 1");
  check(exp_on(isa, -87.5f) == 0.0f && exp_on(isa, -INFINITY) == 0.0f, "exp below -87 is 0");
  check(isinf(exp_on(isa, 89.5f)) && isinf(exp_on(isa, INFINITY)), "exp above 89 is infinity");
  check(isnan(exp_on(isa, NAN)), "exp(NaN) is NaN");
}

/* A row of n scores, the first seen visible: the values, and the sum exp_row must return,
 * formed as it documents from the values it must write. */
static void test_exp_row(enum simd_isa isa, int n, int seen) {
  float row[300], want[300], part[16] = {0};
  float scale = 0.125f, shift = 2.5f;
  for (int c = 0; c < n; c++) row[c] = (float)(60.0 * uniform() - 30.0);
  float twin[300];
  memcpy(twin, row, (size_t)n * sizeof(float));
  simd_limit(SIMD_SCALAR);
  exp_row(twin, n, seen, scale, shift);
  for (int c = 0; c < n; c++) {
    want[c] = c < seen ? exp_on(isa, row[c] * scale - shift) : 0.0f;
    part[c % 16] += want[c];
  }
  simd_limit(isa);
  float sum = exp_row(row, n, seen, scale, shift);
  simd_limit(SIMD_AVX512_BF16);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; i++) part[i] += part[i + w];
  int same = bits(sum) == bits(part[0]), twins = 1;
  for (int c = 0; c < n; c++) {
    same &= bits(row[c]) == bits(want[c]);
    twins &= bits(row[c]) == bits(twin[c]);
  }
  char what[96];
  snprintf(what, sizeof what, "exp_row n %d seen %d: values and sum", n, seen);
  check(same, what);
  snprintf(what, sizeof what, "exp_row n %d seen %d: the scalar twin's bits", n, seen);
  check(twins, what);
}

/* ---- tile_product ---- */

/* A random 16-bit value of magnitude in [1/16, 2), either sign. */
static uint16_t random_16(enum dtype d) {
  double m = ldexp(1.0, -4 + (int)(5 * uniform())) * (1.0 + uniform());
  float x = (float)(uniform() < 0.5 ? -m : m);
  return d == DTYPE_BF16 ? f32_to_bf16(x) : f32_to_f16(x);
}

static float widened(enum dtype d, uint16_t h) { return d == DTYPE_BF16 ? bf16_to_f32(h) : f16_to_f32(h); }

/* Element (i, j) of the operand: rows r of the stored matrix, or its transpose. */
static float element(enum dtype d, const uint16_t *x, int64_t ld, int transposed, int i, int j) {
  return widened(d, transposed ? x[(size_t)j * ld + i] : x[(size_t)i * ld + j]);
}

static void test_product(enum dtype d, enum simd_isa isa, int m, int n, int k, int a_t, int b_t, int accumulate) {
  int64_t lda = (a_t ? m : k) + 3, ldb = (b_t ? k : n) + 3;
  size_t a_count = (size_t)(a_t ? k : m) * lda, b_count = (size_t)(b_t ? n : k) * ldb;
  uint16_t *a = malloc(a_count * 2), *b = malloc(b_count * 2);
  float *c = malloc((size_t)m * (n + 5) * sizeof(float)), *want = malloc((size_t)m * (n + 5) * sizeof(float));
  for (size_t e = 0; e < a_count; e++) a[e] = random_16(d);
  for (size_t e = 0; e < b_count; e++) b[e] = random_16(d);
  int ldc = n + 5;
  for (size_t e = 0; e < (size_t)m * ldc; e++) c[e] = want[e] = (float)(uniform() * 4 - 2);
  for (int i = 0; i < m; i++)
    for (int x = 0; x < n; x++) {
      float sum = 0.0f;
      for (int j = 0; j < (k + 1) / 2; j++) {
        float a1 = 2 * j + 1 < k ? element(d, a, lda, a_t, i, 2 * j + 1) : 0.0f;
        float b1 = 2 * j + 1 < k ? element(d, b, ldb, b_t, 2 * j + 1, x) : 0.0f;
        sum += a1 * b1;
        sum += element(d, a, lda, a_t, i, 2 * j) * element(d, b, ldb, b_t, 2 * j, x);
      }
      want[(size_t)i * ldc + x] = accumulate ? want[(size_t)i * ldc + x] + sum : sum;
    }
  simd_limit(isa);
  tile_product(d, m, n, k, (struct operand){a, lda, a_t}, (struct operand){b, ldb, b_t}, accumulate, c, ldc);
  simd_limit(SIMD_AVX512_BF16);
  int same = 1;
  for (size_t e = 0; e < (size_t)m * ldc; e++) same &= bits(c[e]) == bits(want[e]);
  char what[160];
  snprintf(what, sizeof what, "tile product (%s, %s) %d x %d x %d, a%s, b%s%s: vdpbf16ps's sums", dtype_name(d),
           simd_isa_name(isa), m, n, k, a_t ? " transposed" : "", b_t ? " transposed" : "",
           accumulate ? ", accumulating" : "");
  check(same, what);
  free(a), free(b), free(c), free(want);
}

/* A row of bf16 subnormals times ones sums to zero, as vdpbf16ps reads subnormal inputs;
 * a product of normal values that would be subnormal is flushed too. */
static void test_subnormals(enum simd_isa isa) {
  uint16_t a[4], b[4];
  for (int e = 0; e < 4; e++) a[e] = f32_to_bf16(0x1p-130f), b[e] = f32_to_bf16(1.0f);
  float c[1] = {1.0f};
  simd_limit(isa);
  tile_product(DTYPE_BF16, 1, 1, 4, (struct operand){a, 4, 0}, (struct operand){b, 1, 0}, 0, c, 1);
  uint16_t tiny[2] = {f32_to_bf16(0x1p-70f), f32_to_bf16(0x1p-70f)};
  float flushed[1] = {1.0f};
  tile_product(DTYPE_BF16, 1, 1, 1, (struct operand){tiny, 1, 0}, (struct operand){tiny + 1, 1, 0}, 0, flushed, 1);
  simd_limit(SIMD_AVX512_BF16);
  char what[96];
  snprintf(what, sizeof what, "tile product (bf16, %s): subnormal inputs and sums read as 0", simd_isa_name(isa));
  check(bits(c[0]) == 0 && bits(flushed[0]) == 0, what);
}

/* The tile products of one instruction set: both formats, each layout of a and b, rows
 * with odd strides and odd k, with and without accumulation, and subnormals. */
static void test_products(enum simd_isa isa) {
  static const int shapes[][3] = {{64, 256, 64}, {64, 64, 256}, {256, 64, 64}, {64, 16, 256}, {64, 256, 16},
                                  {7, 5, 3},     {13, 17, 9},   {1, 1, 1},     {5, 33, 16},   {64, 48, 31},
                                  {30, 32, 40},  {50, 80, 7}};
  for (int f = 0; f < 2; f++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int layout = 0; layout < 4; layout++)
        for (int acc = 0; acc < 2; acc++)
          test_product(f ? DTYPE_F16 : DTYPE_BF16, isa, shapes[s][0], shapes[s][1], shapes[s][2], layout & 1,
                       layout >> 1, acc);
  test_subnormals(isa);
}

/* With the argument "avx512_bf16": the tile products on vdpbf16ps alone, skipped (77) where
 * the CPU has no AVX-512 BF16 (the AVX-512 path, the same sums to the bit, is its twin). */
int main(int argc, char **argv) {
  enum simd_isa best = simd_isa();
  if (argc > 1 && strcmp(argv[1], "avx512_bf16") == 0) {
    if (best < SIMD_AVX512_BF16) {
      printf("skipped: no AVX-512 BF16 on this CPU (%s)\n", simd_isa_name(best));
      return 77;
    }
    test_products(SIMD_AVX512_BF16);
  } else {
    for (enum simd_isa isa = SIMD_SCALAR; isa <= best; isa++) {
      test_exp_values(isa);
      static const int rows[][2] = {{1, 1}, {16, 16}, {64, 17}, {256, 256}, {256, 130}, {37, 5}, {300, 1}};
      for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) test_exp_row(isa, rows[i][0], rows[i][1]);
    }
    if (!tile_product_runs())
      printf("tile_product: not on this CPU (%s); attention's 16-bit products run on oneDNN\n", simd_isa_name(best));
    for (enum simd_isa isa = SIMD_AVX2; isa <= best; isa++) test_products(isa);
  }
  printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
