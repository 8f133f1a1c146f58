/* The 16-bit tile products (tile_product.h).
 *
 * bf16 on AVX-512 BF16: vdpbf16ps works on 32-bit words of two bf16
 * values: lane x of its sum adds a1 b1 and then a0 b0, for the words (a0, a1) and
 * (b0, b1) in that lane of its operands. So a is read as words along k, (a[i][2j],
 * a[i][2j+1]), one broadcast to every lane, and b is packed as words (b[2j][x],
 * b[2j+1][x]) that lie along x, sixteen columns a vector (oneDNN's VNNI layout); an odd
 * k's last word pairs its element with a zero. A block of R rows of c by V vectors of
 * columns keeps R V = 16 sums in registers, enough independent dot products to hide
 * their latency: four vectors of columns where n has them, more rows where it has fewer
 * (a 16-wide head's products). Rows past m in a last block repeat row m - 1, unstored.
 * Both operands are packed, one pass over each per product (a 64th of the product's
 * work for a 64-row tile): a's rows copied side by side even where they could be read in
 * place, since the copy meets the cache misses of rows just written by the step's
 * earlier ops before the product does (measured in training, docs/benchmarks.md). */
#include "tile_product.h"

#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "fsdp/error.h"
#include "fsdp/simd.h"

#if defined(__x86_64__)
#include "avx2.h"
#include "avx512.h"

#define BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
#define BF16_INLINE BF16 __attribute__((always_inline)) static inline

enum { VEC = 16, MAX_VECS = 4, SUMS = 16 };

/* a as words: word (i, j) = (a[i][2j], a[i][2j+1]) is w[i * row + j * pair]. */
struct words {
  const uint32_t *w;
  size_t row, pair;
};

static int words_of(int k) { return (k + 1) / 2; }

static __mmask32 first32(int n) { return n <= 0 ? 0 : n >= 32 ? 0xffffffffu : (__mmask32)((1u << n) - 1u); }

/* out[j * out_row + c] = (x[2j][c], x[2j+1][c]) for j < words_of(rows), c < out_cols,
 * where x has rows of cols elements, ld apart, and is 0 past them. */
BF16 static void interleave_rows(uint32_t *out, size_t out_row, const uint16_t *x, int64_t ld, int rows, int cols,
                                 int out_cols) {
  static const uint16_t low[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                   8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  __m512i lo = _mm512_loadu_si512(low), hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
  for (int j = 0; j < words_of(rows); j++) {
    const uint16_t *even = x + 2 * (int64_t)j * ld;
    for (int c = 0; c < out_cols; c += 32) {
      __mmask32 in = first32(cols - c);
      __m512i e = _mm512_maskz_loadu_epi16(in, even + c), o = _mm512_setzero_si512();
      if (2 * j + 1 < rows) o = _mm512_maskz_loadu_epi16(in, even + ld + c);
      uint32_t *dst = out + (size_t)j * out_row + c;
      _mm512_mask_storeu_epi32(dst, first16(out_cols - c), _mm512_permutex2var_epi16(e, lo, o));
      _mm512_mask_storeu_epi32(dst + 16, first16(out_cols - c - 16), _mm512_permutex2var_epi16(e, hi, o));
    }
  }
}

/* out[j * out_row + x] = (y[x][2j], y[x][2j+1]) for j < words_of(k), x < out_cols, where
 * y has n rows of k elements, ld apart, and is 0 past them: y's words transposed, sixteen
 * rows by sixteen words at a time. */
BF16 static void transpose_words(uint32_t *out, size_t out_row, const uint16_t *y, int64_t ld, int n, int k,
                                 int out_cols) {
  for (int x0 = 0; x0 < out_cols; x0 += VEC)
    for (int j0 = 0; j0 < words_of(k); j0 += VEC) {
      __mmask32 in = first32(k - 2 * j0);
      __m512 r[VEC];
      for (int t = 0; t < VEC; t++)
        r[t] = x0 + t < n ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(in, y + (x0 + t) * ld + 2 * j0))
                          : _mm512_setzero_ps();
      transpose16(r);
      for (int t = 0; t < VEC && j0 + t < words_of(k); t++)
        _mm512_mask_storeu_ps(out + (size_t)(j0 + t) * out_row + x0, first16(out_cols - x0), r[t]);
    }
}

/* Rows i0 .. i0 + R - 1 of c by V vectors of columns from x0. */
BF16_INLINE void block(int R, int V, int m, int n, int kp, struct words a, const uint32_t *b, size_t b_row, int i0,
                       int x0, int accumulate, float *c, int ldc) {
  __m512 sum[SUMS];
  const uint32_t *arow[SUMS];
  for (int r = 0; r < R; r++) arow[r] = a.w + (size_t)(i0 + r < m ? i0 + r : m - 1) * a.row;
  for (int s = 0; s < R * V; s++) sum[s] = _mm512_setzero_ps();
  for (int j = 0; j < kp; j++) {
    __m512bh bv[MAX_VECS];
    for (int v = 0; v < V; v++) bv[v] = (__m512bh)_mm512_loadu_si512(b + (size_t)j * b_row + x0 + v * VEC);
    for (int r = 0; r < R; r++) {
      __m512bh av = (__m512bh)_mm512_set1_epi32((int)arow[r][(size_t)j * a.pair]);
      for (int v = 0; v < V; v++) sum[r * V + v] = _mm512_dpbf16_ps(sum[r * V + v], av, bv[v]);
    }
  }
  for (int r = 0; r < R && i0 + r < m; r++)
    for (int v = 0; v < V && x0 + v * VEC < n; v++) {
      __mmask16 keep = first16(n - x0 - v * VEC);
      float *dst = c + (size_t)(i0 + r) * ldc + x0 + v * VEC;
      __m512 out = sum[r * V + v];
      if (accumulate) out = _mm512_add_ps(_mm512_maskz_loadu_ps(keep, dst), out);
      _mm512_mask_storeu_ps(dst, keep, out);
    }
}

BF16_INLINE void column_blocks(int R, int V, int m, int n, int kp, struct words a, const uint32_t *b, size_t b_row,
                               int x0, int accumulate, float *c, int ldc) {
  for (int i0 = 0; i0 < m; i0 += R) block(R, V, m, n, kp, a, b, b_row, i0, x0, accumulate, c, ldc);
}

BF16 static void product(int m, int n, int kp, struct words a, const uint32_t *b, size_t b_row, int accumulate,
                         float *c, int ldc) {
  for (int x0 = 0; x0 < n; x0 += MAX_VECS * VEC) {
    int vecs = (n - x0 + VEC - 1) / VEC;
    switch (vecs < MAX_VECS ? vecs : MAX_VECS) {
    case 1: column_blocks(16, 1, m, n, kp, a, b, b_row, x0, accumulate, c, ldc); break;
    case 2: column_blocks(8, 2, m, n, kp, a, b, b_row, x0, accumulate, c, ldc); break;
    case 3: column_blocks(5, 3, m, n, kp, a, b, b_row, x0, accumulate, c, ldc); break;
    default: column_blocks(4, 4, m, n, kp, a, b, b_row, x0, accumulate, c, ldc); break;
    }
  }
}

BF16 static void product_bf16(int m, int n, int k, struct operand a, struct operand b, int accumulate, float *c,
                              int ldc) {
  int kp = words_of(k), b_cols = (n + VEC - 1) / VEC * VEC;
  size_t b_words = (size_t)kp * b_cols;
  uint32_t *packed = cpu_pack_scratch((b_words + (size_t)m * kp) * sizeof(uint32_t)), *a_words = packed + b_words;
  if (b.transposed)
    transpose_words(packed, b_cols, b.data, b.ld, n, k, b_cols);
  else
    interleave_rows(packed, b_cols, b.data, b.ld, k, n, b_cols);
  struct words aw = {a_words, 1, (size_t)m};
  if (a.transposed)
    interleave_rows(a_words, m, a.data, a.ld, k, m, m);
  else {
    uint16_t *rows = (uint16_t *)a_words;
    for (int i = 0; i < m; i++) {
      memcpy(rows + (size_t)i * 2 * kp, (const uint16_t *)a.data + (size_t)i * a.ld, (size_t)k * sizeof(uint16_t));
      if (k % 2) rows[(size_t)i * 2 * kp + k] = 0;
    }
    aw = (struct words){a_words, (size_t)kp, 1};
  }
  product(m, n, kp, aw, packed, b_cols, accumulate, c, ldc);
}

/* Everywhere else on AVX2: a and b widened to fp32 (exact), the sums down k a pair at a
 * time, the odd element's fused multiply-add and then the even one's: a fused
 * multiply-add adds an exact product as vdpbf16ps does, and the sums run with the MXCSR's
 * DAZ and FTZ set, as vdpbf16ps always does: the same bits (an fp16 product and sum never
 * come near fp32's subnormals). k is padded to even with zeros, b's rows to whole vectors
 * of eight columns. A block of R rows by V vectors keeps R V sums in registers beside V
 * vectors of b and a broadcast of a: 6 x 2 (sixteen columns), 12 x 1 for a last eight.
 * The sums are added to c (or stored) with the caller's MXCSR back. */

enum { VEC8 = 8, MXCSR_DAZ_FTZ = 0x8040 };

/* Up to eight 16-bit values widened (the lanes past count zero). */
AVX2 static inline __m256 widen8(enum dtype d, const uint16_t *x, int count) {
  uint16_t part[VEC8] = {0};
  if (count < VEC8) memcpy(part, x, (size_t)(count > 0 ? count : 0) * sizeof *x);
  __m128i h = _mm_loadu_si128((const __m128i *)(count < VEC8 ? part : x));
  return d == DTYPE_BF16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
}

/* out (rows x width, rows out_ld apart) = x's first cols values of each row (ld apart),
 * widened, zero past cols. */
AVX2 static void widen_rows(enum dtype d, float *out, size_t out_ld, const uint16_t *x, int64_t ld, int rows, int cols,
                            int width) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < width; c += VEC8)
      _mm256_storeu_ps(out + (size_t)r * out_ld + c, widen8(d, x + r * ld + c, cols - c));
}

/* out (cols x width, rows out_ld apart) = the transpose of x (rows x cols, rows ld apart),
 * widened, zero past rows: eight by eight. */
AVX2 static void widen_transposed(enum dtype d, float *out, size_t out_ld, const uint16_t *x, int64_t ld, int rows,
                                  int cols, int width) {
  for (int r0 = 0; r0 < width; r0 += VEC8)
    for (int c0 = 0; c0 < cols; c0 += VEC8) {
      __m256 t[VEC8];
      for (int i = 0; i < VEC8; i++)
        t[i] = r0 + i < rows ? widen8(d, x + (r0 + i) * ld + c0, cols - c0) : _mm256_setzero_ps();
      transpose8(t);
      for (int i = 0; i < VEC8 && c0 + i < cols; i++) _mm256_storeu_ps(out + (size_t)(c0 + i) * out_ld + r0, t[i]);
    }
}

/* a widened: element (i, q) is a[i * row + q * step]. */
struct widened_a {
  const float *a;
  size_t row, step;
};

/* One instruction set's widening of rows, or of a transpose (widen_rows, widen_rows16, ...). */
typedef void (*widen_loop)(enum dtype d, float *out, size_t out_ld, const uint16_t *x, int64_t ld, int rows, int cols,
                           int width);

/* The operands of a product widened into the pack scratch for vectors of `lanes` floats.
 * Returns b (k x n) as kp rows of *cols floats, whole vectors: its rows as stored, or the
 * transpose of the stored (n x k); an odd k's last pair gets a zero row. *wa_at is a
 * (m x k): its stored rows, read along k, zero past k; a transposed one's stored rows lie
 * along m, one a step of k. */
static const float *widen_operands(enum dtype d, int m, int n, int k, struct operand a, struct operand b, int lanes,
                                   widen_loop rows, widen_loop transposed, int *cols, struct widened_a *wa_at) {
  int kp = (k + 1) / 2 * 2;
  *cols = (n + lanes - 1) / lanes * lanes;
  int ka = (kp + lanes - 1) / lanes * lanes, ma = (m + lanes - 1) / lanes * lanes;
  /* b's rows aligned to the vector: cpu_pack_scratch's buffer is to 64 bytes, cols whole vectors. */
  float *wb = cpu_pack_scratch(((size_t)kp * *cols + (size_t)ma * ka) * sizeof(float)), *wa = wb + (size_t)kp * *cols;
  (b.transposed ? transposed : rows)(d, wb, (size_t)*cols, b.data, b.ld, b.transposed ? n : k,
                                     b.transposed ? k : n, *cols);
  if (kp > k) memset(wb + (size_t)k * *cols, 0, (size_t)*cols * sizeof(float));
  *wa_at = (struct widened_a){wa, (size_t)ka, 1};
  if (a.transposed) {
    rows(d, wa, (size_t)ma, a.data, a.ld, k, m, ma);
    if (kp > k) memset(wa + (size_t)k * ma, 0, (size_t)ma * sizeof(float));
    *wa_at = (struct widened_a){wa, 1, (size_t)ma};
  } else {
    rows(d, wa, (size_t)ka, a.data, a.ld, m, k, ka);
  }
  return wb;
}

/* One k-step q of a block: R V fused multiply-adds. */
#define STEP8(q)                                                                              \
  do {                                                                                        \
    __m256 bv[2];                                                                             \
    for (int v = 0; v < V; v++) bv[v] = _mm256_load_ps(b + (size_t)(q) * cols + x0 + v * VEC8); \
    for (int r = 0; r < R; r++) {                                                             \
      __m256 av = _mm256_broadcast_ss(arow[r] + (size_t)(q) * a.step);                        \
      for (int v = 0; v < V; v++) acc[r * V + v] = _mm256_fmadd_ps(av, bv[v], acc[r * V + v]); \
    }                                                                                         \
  } while (0)

/* Rows i0 .. i0 + R - 1 of c by V vectors of columns from x0: the sums in registers under
 * DAZ and FTZ, then stored (or added to c) under the caller's MXCSR, csr. */
AVX2 __attribute__((always_inline)) static inline void block8(int R, int V, int m, int n, int kp, struct widened_a a,
                                                              const float *b, int cols, int i0, int x0,
                                                              int accumulate, float *c, int ldc, unsigned csr) {
  const float *arow[12];
  __m256 acc[12];
  for (int r = 0; r < R; r++) arow[r] = a.a + (size_t)(i0 + r < m ? i0 + r : m - 1) * a.row;
  for (int s = 0; s < R * V; s++) acc[s] = _mm256_setzero_ps();
  _mm_setcsr(csr | MXCSR_DAZ_FTZ);
  for (int j = 0; j < kp; j += 2) {
    STEP8(j + 1);
    STEP8(j);
  }
  _mm_setcsr(csr);
  for (int r = 0; r < R && i0 + r < m; r++)
    for (int v = 0; v < V && x0 + v * VEC8 < n; v++) {
      __m256i keep = first8(n - x0 - v * VEC8);
      float *dst = c + (size_t)(i0 + r) * ldc + x0 + v * VEC8;
      __m256 out = acc[r * V + v];
      if (accumulate) out = _mm256_add_ps(_mm256_maskload_ps(dst, keep), out);
      _mm256_maskstore_ps(dst, keep, out);
    }
}

AVX2 static void product_avx2(enum dtype d, int m, int n, int k, struct operand a, struct operand b, int accumulate,
                              float *c, int ldc) {
  int kp = (k + 1) / 2 * 2, cols;
  struct widened_a wa_at;
  const float *wb = widen_operands(d, m, n, k, a, b, VEC8, widen_rows, widen_transposed, &cols, &wa_at);
  unsigned csr = _mm_getcsr();
  for (int x0 = 0; x0 < n; x0 += 2 * VEC8) {
    if (n - x0 > VEC8)
      for (int i0 = 0; i0 < m; i0 += 6) block8(6, 2, m, n, kp, wa_at, wb, cols, i0, x0, accumulate, c, ldc, csr);
    else
      for (int i0 = 0; i0 < m; i0 += 12) block8(12, 1, m, n, kp, wa_at, wb, cols, i0, x0, accumulate, c, ldc, csr);
  }
}

/* AVX-512 without its BF16 dot products (Skylake to Ice Lake servers), and fp16 on any
 * AVX-512: the AVX2 path's widened sums, sixteen columns a vector: each element's fused
 * multiply-adds in the same order under DAZ and FTZ, the same bits. A block of R rows by
 * V vectors keeps R V = 24 sums in registers (of 32) beside V vectors of b and a
 * broadcast of a. */

enum { VEC16 = 16 };
#define AVX512W __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl")))

/* Up to sixteen 16-bit values widened (the lanes past count zero). */
AVX512W static inline __m512 widen16(enum dtype d, const uint16_t *x, int count) {
  __m256i h = _mm256_maskz_loadu_epi16(count >= VEC16 ? 0xffffu : first16(count), x);
  return d == DTYPE_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

AVX512W static void widen_rows16(enum dtype d, float *out, size_t out_ld, const uint16_t *x, int64_t ld, int rows,
                                 int cols, int width) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < width; c += VEC16)
      _mm512_storeu_ps(out + (size_t)r * out_ld + c, widen16(d, x + r * ld + c, cols - c));
}

AVX512W static void widen_transposed16(enum dtype d, float *out, size_t out_ld, const uint16_t *x, int64_t ld,
                                       int rows, int cols, int width) {
  for (int r0 = 0; r0 < width; r0 += VEC16)
    for (int c0 = 0; c0 < cols; c0 += VEC16) {
      __m512 t[VEC16];
      for (int i = 0; i < VEC16; i++)
        t[i] = r0 + i < rows ? widen16(d, x + (r0 + i) * ld + c0, cols - c0) : _mm512_setzero_ps();
      transpose16(t);
      for (int i = 0; i < VEC16 && c0 + i < cols; i++) _mm512_storeu_ps(out + (size_t)(c0 + i) * out_ld + r0, t[i]);
    }
}

#define STEP16(q)                                                                                \
  do {                                                                                           \
    __m512 bv[4];                                                                                \
    for (int v = 0; v < V; v++) bv[v] = _mm512_load_ps(b + (size_t)(q) * cols + x0 + v * VEC16); \
    for (int r = 0; r < R; r++) {                                                                \
      __m512 av = _mm512_set1_ps(arow[r][(size_t)(q) * a.step]);                                 \
      for (int v = 0; v < V; v++) acc[r * V + v] = _mm512_fmadd_ps(av, bv[v], acc[r * V + v]);  \
    }                                                                                            \
  } while (0)

AVX512W __attribute__((always_inline)) static inline void block16(int R, int V, int m, int n, int kp,
                                                                  struct widened_a a, const float *b, int cols, int i0,
                                                                  int x0, int accumulate, float *c, int ldc,
                                                                  unsigned csr) {
  const float *arow[24];
  __m512 acc[24];
  for (int r = 0; r < R; r++) arow[r] = a.a + (size_t)(i0 + r < m ? i0 + r : m - 1) * a.row;
  for (int s = 0; s < R * V; s++) acc[s] = _mm512_setzero_ps();
  _mm_setcsr(csr | MXCSR_DAZ_FTZ);
  for (int j = 0; j < kp; j += 2) {
    STEP16(j + 1);
    STEP16(j);
  }
  _mm_setcsr(csr);
  for (int r = 0; r < R && i0 + r < m; r++)
    for (int v = 0; v < V && x0 + v * VEC16 < n; v++) {
      __mmask16 keep = first16(n - x0 - v * VEC16);
      float *dst = c + (size_t)(i0 + r) * ldc + x0 + v * VEC16;
      __m512 out = acc[r * V + v];
      if (accumulate) out = _mm512_add_ps(_mm512_maskz_loadu_ps(keep, dst), out);
      _mm512_mask_storeu_ps(dst, keep, out);
    }
}

AVX512W static void product_avx512(enum dtype d, int m, int n, int k, struct operand a, struct operand b,
                                   int accumulate, float *c, int ldc) {
  int kp = (k + 1) / 2 * 2, cols;
  struct widened_a wa_at;
  const float *wb = widen_operands(d, m, n, k, a, b, VEC16, widen_rows16, widen_transposed16, &cols, &wa_at);
  unsigned csr = _mm_getcsr();
  for (int x0 = 0; x0 < n; x0 += 4 * VEC16) {
    int vecs = (n - x0 + VEC16 - 1) / VEC16;
    switch (vecs < 4 ? vecs : 4) {
    case 1:
      for (int i0 = 0; i0 < m; i0 += 24) block16(24, 1, m, n, kp, wa_at, wb, cols, i0, x0, accumulate, c, ldc, csr);
      break;
    case 2:
      for (int i0 = 0; i0 < m; i0 += 12) block16(12, 2, m, n, kp, wa_at, wb, cols, i0, x0, accumulate, c, ldc, csr);
      break;
    case 3:
      for (int i0 = 0; i0 < m; i0 += 8) block16(8, 3, m, n, kp, wa_at, wb, cols, i0, x0, accumulate, c, ldc, csr);
      break;
    default:
      for (int i0 = 0; i0 < m; i0 += 6) block16(6, 4, m, n, kp, wa_at, wb, cols, i0, x0, accumulate, c, ldc, csr);
      break;
    }
  }
}
#endif

int tile_product_runs(void) { return simd_isa() >= SIMD_AVX2; }

void tile_product(enum dtype d, int m, int n, int k, struct operand a, struct operand b, int accumulate, float *c,
                  int ldc) {
  FSDP_CHECK(d == DTYPE_BF16 || d == DTYPE_F16);
#if defined(__x86_64__)
  if (d == DTYPE_BF16 && simd_isa() >= SIMD_AVX512_BF16) {
    product_bf16(m, n, k, a, b, accumulate, c, ldc);
    return;
  }
  if (simd_isa() >= SIMD_AVX512) {
    product_avx512(d, m, n, k, a, b, accumulate, c, ldc);
    return;
  }
  if (simd_isa() >= SIMD_AVX2) {
    product_avx2(d, m, n, k, a, b, accumulate, c, ldc);
    return;
  }
#else
  (void)m, (void)n, (void)k, (void)a, (void)b, (void)accumulate, (void)c, (void)ldc;
#endif
  fsdp_fatal("tile_product: no vector path on this CPU (tile_product_runs says where there is one)");
}
