/* Causal attention, tiled as FlashAttention-2 computes it, never holding a (T, T) matrix:
 * the twin of ../cuda/flash_attention.cu and flash_attention_tc.cu, the same algorithm
 * and rounding points, its query tiles as tall and its key blocks wider (attention.h).
 * For a query head with kv head g (no copy of k and v per query head), s = q k^T / sqrt(hs):
 *   forward, per query tile, over the blocks j of keys it sees in order, with a running
 *   row maximum m and row sum l (fp32):  m' = max(m, rowmax s_j),  p = exp(s_j - m'),
 *     l = l exp(m - m') + rowsum(p),  acc = acc exp(m - m') + round(p) v_j;
 *   out = acc / l (rounded once),  lse = m + log l (fp32, the only thing kept: (B, NH, T)).
 *   backward, from p = exp(s - lse) recomputed per tile and D = rowsum(dout * out):
 *     dv += round(p)^T dout,  dp = dout v^T,  ds = round(p * (dp - D)),
 *     dq += ds k / sqrt(hs),  dk += ds^T q / sqrt(hs).
 * round() is the dtype's rounding (none in fp32), where FlashAttention rounds its 16-bit
 * operands before a tensor-core product; everything else is fp32, the exponentials
 * exp_row's. A tile's products read q, k, v and dout where they lie (rows of a head, qs or
 * kvs elements apart): 16-bit ones on the CPU's own vector instructions from AVX2 up
 * (tile_product.h; the same bits on every one), but on oneDNN's matmul primitive where it
 * runs bf16 on AMX, and below AVX2 (a product of two 16-bit values is exact in fp32, and
 * the sums are fp32); fp32 ones on its sgemm. The
 * scale multiplies each score as it is exponentiated (the forward's maximum is taken of
 * the scaled scores), and dq and dk once, as they are stored. The backward runs in two
 * passes so that each gradient has one writer: per 64-key tile (dk and dv, summed over the
 * query heads sharing it), then per query tile (dq, over its key blocks): no atomics, the
 * same bits for any thread count.
 * Where there are enough (batch, kv head) pairs to keep the threads busy, one task a pair
 * does both passes' work in one (kv_head_backward), each tile's probabilities and score
 * gradients computed once instead of twice, with every sum in the same order: the same
 * bits. Measured in docs/benchmarks.md. */
#include <math.h>
#include <omp.h>
#include <stddef.h>

#include "attention.h"
#include "exp_row.h"
#include "onednn.h"
#include "tile_product.h"
#include "typed.h"

/* A tile's rows of one head: rows n from row r0 on. */
struct tile {
  int r0, n;
};

static struct tile tile_of(int i, int T) {
  int r0 = i * ATTENTION_TILE;
  return (struct tile){r0, T - r0 < ATTENTION_TILE ? T - r0 : ATTENTION_TILE};
}

static int tiles_of(int T) { return (T + ATTENTION_TILE - 1) / ATTENTION_TILE; }

/* Key block j of the keys query tile qt sees (causal: up to its last row): ATTENTION_KEYS
 * keys from j * ATTENTION_KEYS on, fewer in the last. */
static struct tile keys_of(int j, struct tile qt) {
  int r0 = j * ATTENTION_KEYS, end = qt.r0 + qt.n;
  return (struct tile){r0, end - r0 < ATTENTION_KEYS ? end - r0 : ATTENTION_KEYS};
}

static int key_blocks_of(struct tile qt) { return (qt.r0 + qt.n + ATTENTION_KEYS - 1) / ATTENTION_KEYS; }

/* The keys of kt that row r of qt sees (at least one: the keys visited start no later
 * than the query tile). The rest of a row's weights are 0 (exp(-inf)). */
static int visible(struct tile qt, struct tile kt, int r) {
  int n = qt.r0 + r - kt.r0 + 1;
  return n < kt.n ? n : kt.n;
}

/* Rows of t from element first on, ld elements apart. */
static struct operand rows_of(struct tensor t, size_t first, int64_t ld, int transposed) {
  return (struct operand){(const char *)t.data + first * dtype_size(t.dtype), ld, transposed};
}

/* c (m x n, fp32, rows ldc apart) = a b, or c += a b where accumulate, for a (m x k) and
 * b (k x n) in dtype d: 16-bit on tile_product where cpu_attention_on_tiles says, else on the calling
 * thread's own oneDNN primitives (the tiles' parallel region runs one a thread), fp32 on
 * sgemm. */
static void product(enum dtype d, int m, int n, int k, struct operand a, struct operand b, int accumulate, float *c,
                    int ldc) {
  if (d != DTYPE_F32 && cpu_attention_on_tiles(d)) {
    tile_product(d, m, n, k, a, b, accumulate, c, ldc);
    return;
  }
  if (d == DTYPE_F32) {
    onednn_sgemm(a.transposed, b.transposed, m, n, k, 1.0f, a.data, a.ld, b.data, b.ld, accumulate ? 1.0f : 0.0f, c,
                 ldc);
    return;
  }
  struct onednn_matmul mm = {d,
                             1,
                             a.transposed ? onednn_transposed_rows(k, m, a.ld) : onednn_matrix_rows(m, k, a.ld),
                             b.transposed ? onednn_transposed_rows(n, k, b.ld) : onednn_matrix_rows(k, n, b.ld),
                             onednn_matrix_rows(m, n, ldc),
                             0,
                             accumulate};
  onednn_matmul_alone(&mm, a.data, b.data, NULL, c);
}

/* A tile of weights (rows n of cols, ATTENTION_KEYS apart) as a product's operand: in a
 * 16-bit d, rounded into w16 (ATTENTION_TILE x ATTENTION_KEYS values); fp32 ones as they are. */
static struct operand weights(enum dtype d, const float *w, int n, int cols, uint16_t *w16, int transposed) {
  if (d == DTYPE_F32) return (struct operand){w, ATTENTION_KEYS, transposed};
  dtype_pack_rows(d, w, ATTENTION_KEYS, w16, ATTENTION_KEYS, (size_t)n, (size_t)cols);
  return (struct operand){w16, ATTENTION_KEYS, transposed};
}

/* ---- Forward ---- */

/* Scratch floats of a forward tile: acc (TILE x hs), s (TILE x KEYS), m, l, and p's
 * 16-bit values (TILE x KEYS, in half as many floats). */
static size_t forward_floats(int hs) {
  return (size_t)ATTENTION_TILE * hs + (size_t)ATTENTION_TILE * ATTENTION_KEYS * 3 / 2 + 2 * ATTENTION_TILE;
}

/* Query tile qi of head h in batch b, in the thread's scratch. */
static void forward_tile(struct tensor out, struct tensor lse, struct tensor q, struct tensor k, struct tensor v,
                         const struct head_layout *hl, int b, int h, int qi) {
  int T = hl->T, hs = hl->hs, os = hl->NH * hs;
  enum dtype d = out.dtype;
  float scale = 1.0f / sqrtf((float)hs);
  float *acc = cpu_scratch(forward_floats(hs) * sizeof(float)), *s = acc + (size_t)ATTENTION_TILE * hs;
  float *m = s + (size_t)ATTENTION_TILE * ATTENTION_KEYS, *l = m + ATTENTION_TILE;
  uint16_t *p16 = (uint16_t *)(l + ATTENTION_TILE);
  struct tile qt = tile_of(qi, T);
  struct operand qrows = rows_of(q, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, hl->qs, 0);
  size_t kva = head_at(hl, hl->kvs, b, h / (hl->NH / hl->NKV));
  for (int r = 0; r < qt.n; r++) m[r] = -INFINITY, l[r] = 0.0f;
  for (size_t e = 0; e < (size_t)qt.n * hs; e++) acc[e] = 0.0f;
  for (int j = 0; j < key_blocks_of(qt); j++) {
    struct tile kt = keys_of(j, qt);
    size_t at = kva + (size_t)kt.r0 * hl->kvs;
    product(d, qt.n, kt.n, hs, qrows, rows_of(k, at, hl->kvs, 1), 0, s, ATTENTION_KEYS);
    for (int r = 0; r < qt.n; r++) {
      float *row = s + (size_t)r * ATTENTION_KEYS, mx = m[r];
      int seen = visible(qt, kt, r);
#pragma omp simd reduction(max : mx)
      for (int c = 0; c < seen; c++) {
        float x = row[c] * scale;
        mx = x > mx ? x : mx;
      }
      float sum = exp_row(row, kt.n, seen, scale, mx), rescale = expf(m[r] - mx);
      l[r] = l[r] * rescale + sum;
      m[r] = mx;
      for (int e = 0; e < hs; e++) acc[(size_t)r * hs + e] *= rescale;
    }
    product(d, qt.n, hs, kt.n, weights(d, s, qt.n, kt.n, p16, 0), rows_of(v, at, hl->kvs, 0), 1, acc, hs);
  }
  size_t la = ((size_t)b * hl->NH + h) * T + (size_t)qt.r0;
  for (int r = 0; r < qt.n; r++) {
    float inv = 1.0f / l[r];
    for (int e = 0; e < hs; e++) acc[(size_t)r * hs + e] *= inv;
    f32(lse)[la + r] = m[r] + logf(l[r]);
  }
  rows_store(out, head_at(hl, os, b, h) + (size_t)qt.r0 * os, qt.n, hs, (size_t)os, acc);
}

/* A task a query tile, a head's tiles one after another, so that its keys and values are
 * still in the core's cache for the next (measured in training, where they come from the
 * step's earlier products, docs/benchmarks.md); within a head the most expensive (the last,
 * which sees every key) first. */
static void attention_forward(struct tensor out, struct tensor lse, struct tensor q, struct tensor k,
                              struct tensor v, const struct head_layout *hl) {
  int nt = tiles_of(hl->T);
#pragma omp parallel for collapse(3) schedule(dynamic)
  for (int b = 0; b < hl->B; b++)
    for (int h = 0; h < hl->NH; h++)
      for (int i = 0; i < nt; i++) forward_tile(out, lse, q, k, v, hl, b, h, nt - 1 - i);
}

/* ---- Backward ---- */

/* A query tile in the backward: where its q and dout rows lie, its lse and D, and two
 * tiles of TILE x hs floats to widen into (free again once D is known). */
struct query_rows {
  struct operand q, dout;
  float *lse, *D, *wide;
};

/* Scratch floats of a query_rows. */
static size_t query_rows_floats(int hs) { return 2 * (size_t)ATTENTION_TILE * hs + 2 * ATTENTION_TILE; }

/* Query tile qt of head h in batch b, in floats f (query_rows_floats): lse, and
 * D = rowsum(dout * out). */
static struct query_rows query_rows_in(float *f, struct tensor q, struct tensor dout, struct tensor out,
                                       struct tensor lse, const struct head_layout *hl, int b, int h, struct tile qt) {
  int hs = hl->hs, os = hl->NH * hs;
  size_t TH = (size_t)ATTENTION_TILE * hs, oa = head_at(hl, os, b, h) + (size_t)qt.r0 * os;
  struct query_rows x = {rows_of(q, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, hl->qs, 0),
                         rows_of(dout, oa, os, 0), f + 2 * TH, f + 2 * TH + ATTENTION_TILE, f};
  float *o = x.wide + TH;
  rows_in(dout, oa, qt.n, hs, (size_t)os, x.wide);
  rows_in(out, oa, qt.n, hs, (size_t)os, o);
  const float *l = f32(lse) + ((size_t)b * hl->NH + h) * hl->T + (size_t)qt.r0;
  for (int r = 0; r < qt.n; r++) {
    const float *a = x.wide + (size_t)r * hs, *c = o + (size_t)r * hs;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int e = 0; e < hs; e++) sum += a[e] * c[e];
    x.D[r] = sum;
    x.lse[r] = l[r];
  }
  return x;
}

/* s (qt.n, kt.n) = p = exp(scores - lse), 0 where masked, unrounded. */
static void probabilities(enum dtype d, float *s, const struct query_rows *x, struct operand k, struct tile qt,
                          struct tile kt, int hs, float scale) {
  product(d, qt.n, kt.n, hs, x->q, k, 0, s, ATTENTION_KEYS);
  for (int r = 0; r < qt.n; r++) exp_row(s + (size_t)r * ATTENTION_KEYS, kt.n, visible(qt, kt, r), scale, x->lse[r]);
}

/* ds (qt.n, kt.n, in dp's place) = p * (dout v^T - D), unrounded. */
static void score_grads(enum dtype d, float *dp, const float *p, const struct query_rows *x, struct operand v,
                        struct tile qt, struct tile kt, int hs) {
  product(d, qt.n, kt.n, hs, x->dout, v, 0, dp, ATTENTION_KEYS);
  for (int r = 0; r < qt.n; r++) {
    float *row = dp + (size_t)r * ATTENTION_KEYS, Dr = x->D[r];
    const float *prow = p + (size_t)r * ATTENTION_KEYS;
#pragma omp simd
    for (int c = 0; c < kt.n; c++) row[c] = prow[c] * (row[c] - Dr);
  }
}

/* A backward task's tiles in the thread's scratch: a query_rows' floats, two gradient
 * sums (TILE x hs, zeroed), p and ds (TILE x KEYS), and their 16-bit values. */
struct backward_tiles {
  float *x, *sum1, *sum2, *p, *ds;
  uint16_t *p16, *ds16;
};

static struct backward_tiles backward_tiles_of(int hs, size_t extra_floats) {
  size_t TH = (size_t)ATTENTION_TILE * hs, TT = (size_t)ATTENTION_TILE * ATTENTION_KEYS;
  float *f = cpu_scratch((query_rows_floats(hs) + 2 * TH + 3 * TT + extra_floats) * sizeof(float));
  float *sum1 = f + query_rows_floats(hs), *p = sum1 + 2 * TH, *ds = p + TT;
  struct backward_tiles w = {f, sum1, sum1 + TH, p, ds, (uint16_t *)(ds + TT), (uint16_t *)(ds + TT) + TT};
  for (size_t e = 0; e < 2 * TH; e++) w.sum1[e] = 0.0f; /* and sum2 */
  return w;
}

struct backward_args {
  struct tensor dq, dk, dv, dout, out, lse, q, k, v;
  const struct head_layout *hl;
  enum nn_grad mode;
};

/* rows rows of gradient t (each stride apart, the first at first) += (NN_GRAD_ADD) or
 * = (NN_GRAD_SET) scale * src (rows x cols), rounded once; widened a tile of rows at a
 * time into buf (ATTENTION_TILE x cols floats). */
static void rows_put(const struct backward_args *a, struct tensor t, size_t first, int rows, int cols, size_t stride,
                     const float *src, float scale, float *buf) {
  for (int r0 = 0; r0 < rows; r0 += ATTENTION_TILE) {
    int n = rows - r0 < ATTENTION_TILE ? rows - r0 : ATTENTION_TILE;
    size_t at = first + (size_t)r0 * stride, count = (size_t)n * cols;
    const float *part = src + (size_t)r0 * cols;
    if (a->mode == NN_GRAD_ADD) {
      rows_in(t, at, n, cols, stride, buf);
      for (size_t e = 0; e < count; e++) buf[e] += scale * part[e];
    } else {
      for (size_t e = 0; e < count; e++) buf[e] = scale * part[e];
    }
    rows_store(t, at, n, cols, stride, buf);
  }
}

/* The keys a dk or dv product spans at most. oneDNN's aarch64 sgemm and matmul add c to
 * an accumulating product (c += a b) in another order for some row counts than for others
 * (x86's take one order for any): there each product spans a 64-key tile, the two-pass
 * backward's, whatever the block, so that one pass and two give the same bits. */
#if defined(__x86_64__)
enum { KV_PRODUCT_KEYS = ATTENTION_KEYS };
#else
enum { KV_PRODUCT_KEYS = ATTENTION_TILE };
#endif

/* Transposed operand t from its column c0 on. */
static struct operand columns_from(enum dtype d, struct operand t, int c0) {
  return (struct operand){(const char *)t.data + (size_t)c0 * dtype_size(d), t.ld, t.transposed};
}

/* dv += round(p)^T dout and dk += ds^T q (unscaled) of query tile qt against key tile kt,
 * into dvf and dkf (kt.n x hs); dsT is round(ds)^T, where dk is wanted. */
static void kv_grads(const struct backward_args *a, const struct backward_tiles *w, const struct query_rows *x,
                     struct operand dsT, struct tile qt, struct tile kt, float *dkf, float *dvf) {
  enum dtype d = a->dout.dtype;
  int hs = a->hl->hs;
  struct operand pT = a->dv.data ? weights(d, w->p, qt.n, kt.n, w->p16, 1) : dsT;
  for (int k0 = 0; k0 < kt.n; k0 += KV_PRODUCT_KEYS) {
    int n = kt.n - k0 < KV_PRODUCT_KEYS ? kt.n - k0 : KV_PRODUCT_KEYS;
    size_t at = (size_t)k0 * hs;
    if (a->dv.data) product(d, n, hs, qt.n, columns_from(d, pT, k0), x->dout, 1, dvf + at, hs);
    if (a->dk.data) product(d, n, hs, qt.n, columns_from(d, dsT, k0), x->q, 1, dkf + at, hs);
  }
}

/* Key tile kj of kv head g in batch b: dk and dv summed over every query head sharing g
 * and every query tile that sees kj. */
static void kv_tile_backward(const struct backward_args *a, int b, int g, int kj) {
  const struct head_layout *hl = a->hl;
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  enum dtype d = a->dout.dtype;
  float scale = 1.0f / sqrtf((float)hs);
  struct backward_tiles w = backward_tiles_of(hs, 0);
  float *dkf = w.sum1, *dvf = w.sum2;
  struct tile kt = tile_of(kj, T);
  size_t kva = head_at(hl, hl->kvs, b, g) + (size_t)kt.r0 * hl->kvs;
  struct operand kT = rows_of(a->k, kva, hl->kvs, 1), vT = rows_of(a->v, kva, hl->kvs, 1);
  for (int h = g * group; h < (g + 1) * group; h++) {
    for (int qi = kj; qi < tiles_of(T); qi++) {
      struct tile qt = tile_of(qi, T);
      struct query_rows x = query_rows_in(w.x, a->q, a->dout, a->out, a->lse, hl, b, h, qt);
      probabilities(d, w.p, &x, kT, qt, kt, hs, scale);
      struct operand dsT = {0};
      if (a->dk.data) {
        score_grads(d, w.ds, w.p, &x, vT, qt, kt, hs);
        dsT = weights(d, w.ds, qt.n, kt.n, w.ds16, 1);
      }
      kv_grads(a, &w, &x, dsT, qt, kt, dkf, dvf);
    }
  }
  if (a->dk.data) rows_put(a, a->dk, kva, kt.n, hs, (size_t)hl->kvs, dkf, scale, w.x);
  if (a->dv.data) rows_put(a, a->dv, kva, kt.n, hs, (size_t)hl->kvs, dvf, 1.0f, w.x);
}

/* Query tile qi of head h in batch b: dq over the key blocks it sees. */
static void q_tile_backward(const struct backward_args *a, int b, int h, int qi) {
  const struct head_layout *hl = a->hl;
  int T = hl->T, hs = hl->hs;
  enum dtype d = a->dout.dtype;
  float scale = 1.0f / sqrtf((float)hs);
  struct backward_tiles w = backward_tiles_of(hs, 0);
  float *dqf = w.sum1;
  struct tile qt = tile_of(qi, T);
  size_t kva = head_at(hl, hl->kvs, b, h / (hl->NH / hl->NKV));
  struct query_rows x = query_rows_in(w.x, a->q, a->dout, a->out, a->lse, hl, b, h, qt);
  for (int j = 0; j < key_blocks_of(qt); j++) {
    struct tile kt = keys_of(j, qt);
    size_t at = kva + (size_t)kt.r0 * hl->kvs;
    probabilities(d, w.p, &x, rows_of(a->k, at, hl->kvs, 1), qt, kt, hs, scale);
    score_grads(d, w.ds, w.p, &x, rows_of(a->v, at, hl->kvs, 1), qt, kt, hs);
    product(d, qt.n, hs, kt.n, weights(d, w.ds, qt.n, kt.n, w.ds16, 0), rows_of(a->k, at, hl->kvs, 0), 1, dqf, hs);
  }
  rows_put(a, a->dq, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, qt.n, hs, (size_t)hl->qs, dqf, scale, x.wide);
}

/* Every tile of kv head g in batch b in one task: each query tile of each query head
 * sharing g against each block of keys it sees. The sums run in kv_tile_backward's and
 * q_tile_backward's orders (dk and dv of a key over (query head, query tile) in order,
 * dq of a query tile over its key blocks in order), each key's row of a product the
 * same sum over the query tile whether the product spans its 64-key tile or its block:
 * the same bits. Scratch: dk and dv for the whole head (2 x T x hs floats) after the
 * tiles. */
static void kv_head_backward(const struct backward_args *a, int b, int g) {
  const struct head_layout *hl = a->hl;
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV, nt = tiles_of(T);
  enum dtype d = a->dout.dtype;
  float scale = 1.0f / sqrtf((float)hs);
  size_t head = (size_t)T * hs, TH = (size_t)ATTENTION_TILE * hs;
  struct backward_tiles w = backward_tiles_of(hs, 2 * head);
  float *dqf = w.sum1, *dkf = (float *)(w.ds16 + (size_t)ATTENTION_TILE * ATTENTION_KEYS), *dvf = dkf + head;
  size_t kva = head_at(hl, hl->kvs, b, g);
  for (size_t e = 0; e < 2 * head; e++) dkf[e] = 0.0f; /* and dvf */
  for (int h = g * group; h < (g + 1) * group; h++)
    for (int qi = 0; qi < nt; qi++) {
      struct tile qt = tile_of(qi, T);
      struct query_rows x = query_rows_in(w.x, a->q, a->dout, a->out, a->lse, hl, b, h, qt);
      for (size_t e = 0; e < TH; e++) dqf[e] = 0.0f;
      for (int j = 0; j < key_blocks_of(qt); j++) {
        struct tile kt = keys_of(j, qt);
        size_t at = kva + (size_t)kt.r0 * hl->kvs;
        probabilities(d, w.p, &x, rows_of(a->k, at, hl->kvs, 1), qt, kt, hs, scale);
        score_grads(d, w.ds, w.p, &x, rows_of(a->v, at, hl->kvs, 1), qt, kt, hs);
        struct operand ds = weights(d, w.ds, qt.n, kt.n, w.ds16, 0), dsT = ds;
        dsT.transposed = 1;
        kv_grads(a, &w, &x, dsT, qt, kt, dkf + (size_t)kt.r0 * hs, dvf + (size_t)kt.r0 * hs);
        if (a->dq.data) product(d, qt.n, hs, kt.n, ds, rows_of(a->k, at, hl->kvs, 0), 1, dqf, hs);
      }
      if (a->dq.data)
        rows_put(a, a->dq, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, qt.n, hs, (size_t)hl->qs, dqf, scale,
                 x.wide);
    }
  if (a->dk.data) rows_put(a, a->dk, kva, T, hs, (size_t)hl->kvs, dkf, scale, w.x);
  if (a->dv.data) rows_put(a, a->dv, kva, T, hs, (size_t)hl->kvs, dvf, 1.0f, w.x);
}

/* One pass where the (batch, kv head) pairs are at least twice the threads; two, over
 * tiles, where a pair a thread would leave threads idle. */
static void attention_backward(const struct backward_args *a) {
  const struct head_layout *hl = a->hl;
  int nt = tiles_of(hl->T);
  if (hl->B * hl->NKV >= 2 * omp_get_max_threads()) {
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int b = 0; b < hl->B; b++)
      for (int g = 0; g < hl->NKV; g++) kv_head_backward(a, b, g);
    return;
  }
  if (a->dk.data || a->dv.data) {
#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int j = 0; j < nt; j++)
      for (int b = 0; b < hl->B; b++)
        for (int g = 0; g < hl->NKV; g++) kv_tile_backward(a, b, g, j);
  }
  if (a->dq.data) {
#pragma omp parallel for collapse(3) schedule(dynamic)
    for (int i = 0; i < nt; i++)
      for (int b = 0; b < hl->B; b++)
        for (int h = 0; h < hl->NH; h++) q_tile_backward(a, b, h, nt - 1 - i);
  }
}

/* ---- GPT-2's packed heads and Llama's ---- */

/* GPT-2's packed qkv (B, T, 3C): q, k and v side by side in each row, NKV = NH. */
static struct head_layout packed_heads(struct tensor lse, int C) {
  int NH = dim(lse, 1);
  return (struct head_layout){dim(lse, 0), dim(lse, 2), NH, NH, C / NH, 3 * C, 3 * C};
}

/* Llama's q (B, T, NH, hd), k and v (B, T, NKV, hd). */
static struct head_layout gqa_heads(struct tensor q, struct tensor k) {
  return (struct head_layout){dim(q, 0), dim(q, 1), dim(q, 2), dim(k, 2), dim(q, 3), dim(q, 2) * dim(q, 3),
                              dim(k, 2) * dim(k, 3)};
}

/* Part i (0: q, 1: k, 2: v) of a packed qkv (B, T, 3C), or of its gradient: a view from
 * its first element on, whose positions are 3C apart (none where qkv has no data). */
static struct tensor packed_part(struct tensor qkv, int C, int i) {
  if (!qkv.data) return qkv;
  size_t first = (size_t)i * C;
  return tensor_slice(&qkv, first, tensor_numel(&qkv) - first);
}

void cpu_attention_forward(void *p) {
  const struct attention_args *a = p;
  int C = cols(a->out);
  struct head_layout hl = packed_heads(a->lse, C);
  attention_forward(a->out, a->lse, packed_part(a->qkv, C, 0), packed_part(a->qkv, C, 1), packed_part(a->qkv, C, 2),
                    &hl);
}

void cpu_attention_backward(void *p) {
  const struct attention_backward_args *a = p;
  if (!a->dqkv.data) return;
  int C = cols(a->dout);
  struct head_layout hl = packed_heads(a->lse, C);
  struct backward_args x = {packed_part(a->dqkv, C, 0), packed_part(a->dqkv, C, 1), packed_part(a->dqkv, C, 2),
                            a->dout, a->out, a->lse, packed_part(a->qkv, C, 0), packed_part(a->qkv, C, 1),
                            packed_part(a->qkv, C, 2), &hl, a->dqkv_mode};
  attention_backward(&x);
}

void cpu_gqa_attention_forward(void *p) {
  const struct gqa_attention_args *a = p;
  struct head_layout hl = gqa_heads(a->q, a->k);
  attention_forward(a->out, a->lse, a->q, a->k, a->v, &hl);
}

void cpu_gqa_attention_backward(void *p) {
  const struct gqa_attention_backward_args *a = p;
  struct head_layout hl = gqa_heads(a->q, a->k);
  struct backward_args x = {a->dq, a->dk, a->dv, a->dout, a->out, a->lse, a->q, a->k, a->v, &hl, a->mode};
  attention_backward(&x);
}
