/* The CPU attention's tile helpers (src/nn/cpu): exp_row and the bf16 tile product.
 *   exp_row: within 2 ulp of exp (in double) where the result is a normal fp32 value, 0
 *     below -87 and for hidden keys, infinity above 89, NaN for NaN, and its row sum the
 *     documented pairwise sum, to the bit; the AVX-512 path and the scalar twin give the
 *     same bits (fsdp/simd.h).
 *   tile_product_bf16 (where the CPU has AVX-512 BF16): every element against the sum
 *     vdpbf16ps forms, written out in scalar C (odd term, then even, from 0, in fp32;
 *     these operands' products and sums stay far from subnormals, which the instruction
 *     flushes), to the bit, for each layout of a and b, rows with odd strides and odd
 *     k, and with and without accumulation. */
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
  printf("exp (%s): worst %.2f ulp over normal results\n", isa == SIMD_SCALAR ? "scalar" : "avx512", worst);
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

/* ---- tile_product_bf16 ---- */

/* A random bf16 of magnitude in [1/16, 2), either sign. */
static uint16_t random_bf16(void) {
  double m = ldexp(1.0, -4 + (int)(5 * uniform())) * (1.0 + uniform());
  return f32_to_bf16((float)(uniform() < 0.5 ? -m : m));
}

/* Element (i, j) of the operand: rows r of the stored matrix, or its transpose. */
static float element(const uint16_t *x, int64_t ld, int transposed, int i, int j) {
  return bf16_to_f32(transposed ? x[(size_t)j * ld + i] : x[(size_t)i * ld + j]);
}

static void test_product(int m, int n, int k, int a_t, int b_t, int accumulate) {
  int64_t lda = (a_t ? m : k) + 3, ldb = (b_t ? k : n) + 3;
  size_t a_count = (size_t)(a_t ? k : m) * lda, b_count = (size_t)(b_t ? n : k) * ldb;
  uint16_t *a = malloc(a_count * 2), *b = malloc(b_count * 2);
  float *c = malloc((size_t)m * (n + 5) * sizeof(float)), *want = malloc((size_t)m * (n + 5) * sizeof(float));
  for (size_t e = 0; e < a_count; e++) a[e] = random_bf16();
  for (size_t e = 0; e < b_count; e++) b[e] = random_bf16();
  int ldc = n + 5;
  for (size_t e = 0; e < (size_t)m * ldc; e++) c[e] = want[e] = (float)(uniform() * 4 - 2);
  for (int i = 0; i < m; i++)
    for (int x = 0; x < n; x++) {
      float sum = 0.0f;
      for (int j = 0; j < (k + 1) / 2; j++) {
        float a1 = 2 * j + 1 < k ? element(a, lda, a_t, i, 2 * j + 1) : 0.0f;
        float b1 = 2 * j + 1 < k ? element(b, ldb, b_t, 2 * j + 1, x) : 0.0f;
        sum += a1 * b1;
        sum += element(a, lda, a_t, i, 2 * j) * element(b, ldb, b_t, 2 * j, x);
      }
      want[(size_t)i * ldc + x] = accumulate ? want[(size_t)i * ldc + x] + sum : sum;
    }
  tile_product_bf16(m, n, k, (struct operand){a, lda, a_t}, (struct operand){b, ldb, b_t}, accumulate, c, ldc);
  int same = 1;
  for (size_t e = 0; e < (size_t)m * ldc; e++) same &= bits(c[e]) == bits(want[e]);
  char what[128];
  snprintf(what, sizeof what, "tile product %d x %d x %d, a%s, b%s%s: vdpbf16ps's sums", m, n, k,
           a_t ? " transposed" : "", b_t ? " transposed" : "", accumulate ? ", accumulating" : "");
  check(same, what);
  free(a), free(b), free(c), free(want);
}

int main(void) {
  enum simd_isa best = simd_isa();
  for (int p = 0; p < 2; p++) {
    enum simd_isa isa = p == 0 ? SIMD_SCALAR : SIMD_AVX512;
    if (isa > best) break;
    test_exp_values(isa);
    static const int rows[][2] = {{1, 1}, {16, 16}, {64, 17}, {256, 256}, {256, 130}, {37, 5}, {300, 1}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) test_exp_row(isa, rows[i][0], rows[i][1]);
  }
  if (tile_product_bf16_runs()) {
    static const int shapes[][3] = {{64, 256, 64}, {64, 64, 256}, {256, 64, 64}, {64, 16, 256}, {64, 256, 16},
                                    {7, 5, 3},     {13, 17, 9},   {1, 1, 1},     {5, 33, 16},   {64, 48, 31}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int layout = 0; layout < 4; layout++)
        for (int acc = 0; acc < 2; acc++)
          test_product(shapes[s][0], shapes[s][1], shapes[s][2], layout & 1, layout >> 1, acc);
  } else {
    printf("tile_product_bf16: not on this CPU (no AVX-512 BF16); attention's bf16 products run on oneDNN\n");
  }
  printf("%d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
