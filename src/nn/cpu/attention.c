/* Causal attention, tiled as FlashAttention-2 computes it, never holding a (T, T) matrix:
 * the twin of ../cuda/flash_attention.cu and flash_attention_tc.cu, the same algorithm,
 * tiles and rounding points.
 * For a query head with kv head g (no copy of k and v per query head), s = q k^T / sqrt(hs):
 *   forward, per query tile, over its key tiles j in order, with a running row maximum m
 *   and row sum l (fp32):  m' = max(m, rowmax s_j),  p = exp(s_j - m'),
 *     l = l exp(m - m') + rowsum(p),  acc = acc exp(m - m') + round(p) v_j;
 *   out = acc / l (rounded once),  lse = m + log l (fp32, the only thing kept: (B, NH, T)).
 *   backward, from p = exp(s - lse) recomputed per tile and D = rowsum(dout * out):
 *     dv += round(p)^T dout,  dp = dout v^T,  ds = round(p * (dp - D)),
 *     dq += ds k / sqrt(hs),  dk += ds^T q / sqrt(hs).
 * round() is the dtype's rounding (none in fp32), where FlashAttention rounds its 16-bit
 * operands before a tensor-core product; everything else is fp32. The backward runs in
 * two passes so that each gradient has one writer: per kv tile (dk and dv, summed over
 * the query heads sharing it), then per query tile (dq): no atomics, the same bits for
 * any thread count. Where there are enough (batch, kv head) pairs to keep the threads
 * busy, one task a pair widens the pair's k and v once and runs every query tile of its
 * query heads against them (kv_head_forward), and does both backward passes' work in one
 * (kv_head_backward), each query tile widened once and each tile's probabilities and
 * score gradients computed once instead of twice, with every sum in the same order: the
 * same bits. A tile's operands are widened into the thread's scratch and its
 * products are oneDNN's fp32 sgemm (16-bit values multiply exactly in fp32, so this is a
 * 16-bit product with fp32 accumulation); measured in docs/benchmarks.md. */
#include <math.h>
#include <omp.h>
#include <stddef.h>

#include "attention.h"
#include "onednn.h"
#include "typed.h"

/* As in gelu.c: declaring expf an OpenMP simd function lets the softmax call
 * glibc's vector expf without -ffast-math. */
#pragma omp declare simd notinbranch
float expf(float x);

/* A tile's rows of one head: rows n from row r0 on. */
struct tile {
  int r0, n;
};

static struct tile tile_of(int i, int T) {
  int r0 = i * ATTENTION_TILE;
  return (struct tile){r0, T - r0 < ATTENTION_TILE ? T - r0 : ATTENTION_TILE};
}

static int tiles_of(int T) { return (T + ATTENTION_TILE - 1) / ATTENTION_TILE; }

/* s (qt.n, kt.n, rows ATTENTION_TILE apart) = scale q k^T. */
static void scores(float *s, const float *q, const float *k, struct tile qt, struct tile kt, int hs, float scale) {
  onednn_sgemm(0, 1, qt.n, kt.n, hs, scale, q, hs, k, hs, 0.0f, s, ATTENTION_TILE);
}

/* The keys of kt that row r of qt sees (at least one: the tiles visited start no later
 * than the query tile). The softmax's loops stop there and the rest of a row's weights are
 * 0 (exp(-inf), without glibc's vector expf falling back to its scalar code for them). */
static int visible(struct tile qt, struct tile kt, int r) {
  int n = qt.r0 + r - kt.r0 + 1;
  return n < kt.n ? n : kt.n;
}

/* The rows of key tile kt of k and v (from element first on) widened into kf and vf. */
static void kv_tile_in(struct tensor k, struct tensor v, size_t first, struct tile kt, const struct head_layout *hl,
                       float *kf, float *vf) {
  rows_in(k, first, kt.n, hl->hs, (size_t)hl->kvs, kf);
  rows_in(v, first, kt.n, hl->hs, (size_t)hl->kvs, vf);
}

/* ---- Forward ---- */

/* Scratch floats of a forward tile: q, k, v, acc (TILE x hs), s (TILE x TILE), m, l. */
static size_t forward_floats(int hs) {
  return 4 * (size_t)ATTENTION_TILE * hs + (size_t)ATTENTION_TILE * ATTENTION_TILE + 2 * ATTENTION_TILE;
}

/* Query tile qi of head h in batch b, in scratch (forward_floats), against the kv head's
 * k and v widened whole in kv (T x hs each, k then v), or, without it, tile by tile. */
static void forward_tile(struct tensor out, struct tensor lse, struct tensor q, struct tensor k, struct tensor v,
                         const struct head_layout *hl, int b, int h, int qi, float *scratch, const float *kv) {
  int T = hl->T, hs = hl->hs, os = hl->NH * hs;
  size_t TH = (size_t)ATTENTION_TILE * hs;
  float scale = 1.0f / sqrtf((float)hs);
  float *qf = scratch, *kf = qf + TH, *vf = kf + TH, *acc = vf + TH, *s = acc + TH;
  float *m = s + (size_t)ATTENTION_TILE * ATTENTION_TILE, *l = m + ATTENTION_TILE;
  struct tile qt = tile_of(qi, T);
  size_t kva = head_at(hl, hl->kvs, b, h / (hl->NH / hl->NKV));
  rows_in(q, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, qt.n, hs, (size_t)hl->qs, qf);
  for (int r = 0; r < qt.n; r++) m[r] = -INFINITY, l[r] = 0.0f;
  for (size_t e = 0; e < (size_t)qt.n * hs; e++) acc[e] = 0.0f;
  for (int kj = 0; kj <= qi; kj++) {
    struct tile kt = tile_of(kj, T);
    const float *kt_k = kf, *kt_v = vf;
    if (kv)
      kt_k = kv + (size_t)kt.r0 * hs, kt_v = kv + (size_t)T * hs + (size_t)kt.r0 * hs;
    else
      kv_tile_in(k, v, kva + (size_t)kt.r0 * hl->kvs, kt, hl, kf, vf);
    scores(s, qf, kt_k, qt, kt, hs, scale);
    for (int r = 0; r < qt.n; r++) {
      float *row = s + (size_t)r * ATTENTION_TILE, mx = m[r], sum = 0.0f;
      int seen = visible(qt, kt, r);
#pragma omp simd reduction(max : mx)
      for (int c = 0; c < seen; c++) mx = row[c] > mx ? row[c] : mx;
#pragma omp simd reduction(+ : sum)
      for (int c = 0; c < seen; c++) {
        row[c] = expf(row[c] - mx);
        sum += row[c];
      }
      for (int c = seen; c < kt.n; c++) row[c] = 0.0f;
      float rescale = expf(m[r] - mx);
      l[r] = l[r] * rescale + sum;
      m[r] = mx;
      for (int e = 0; e < hs; e++) acc[(size_t)r * hs + e] *= rescale;
      dtype_round(out.dtype, row, (size_t)kt.n);
    }
    onednn_sgemm(0, 0, qt.n, hs, kt.n, 1.0f, s, ATTENTION_TILE, kt_v, hs, 1.0f, acc, hs);
  }
  size_t la = ((size_t)b * hl->NH + h) * T + (size_t)qt.r0;
  for (int r = 0; r < qt.n; r++) {
    float inv = 1.0f / l[r];
    for (int e = 0; e < hs; e++) acc[(size_t)r * hs + e] *= inv;
    f32(lse)[la + r] = m[r] + logf(l[r]);
  }
  rows_store(out, head_at(hl, os, b, h) + (size_t)qt.r0 * os, qt.n, hs, (size_t)os, acc);
}

/* Every query tile of every query head of kv head g in batch b, k and v widened once. */
static void kv_head_forward(struct tensor out, struct tensor lse, struct tensor q, struct tensor k, struct tensor v,
                            const struct head_layout *hl, int b, int g) {
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  size_t head = (size_t)T * hs;
  float *kv = cpu_scratch((2 * head + forward_floats(hs)) * sizeof(float)), *scratch = kv + 2 * head;
  size_t kva = head_at(hl, hl->kvs, b, g);
  rows_in(k, kva, T, hs, (size_t)hl->kvs, kv);
  rows_in(v, kva, T, hs, (size_t)hl->kvs, kv + head);
  for (int h = g * group; h < (g + 1) * group; h++)
    for (int qi = 0; qi < tiles_of(T); qi++) forward_tile(out, lse, q, k, v, hl, b, h, qi, scratch, kv);
}

/* A task a (batch, kv head) pair where they are at least twice the threads; else a task a
 * query tile, the most expensive (the last, which see every key) first. Each tile's
 * arithmetic is the same either way: the same bits. */
static void attention_forward(struct tensor out, struct tensor lse, struct tensor q, struct tensor k,
                              struct tensor v, const struct head_layout *hl) {
  int nt = tiles_of(hl->T);
  if (hl->B * hl->NKV >= 2 * omp_get_max_threads()) {
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int b = 0; b < hl->B; b++)
      for (int g = 0; g < hl->NKV; g++) kv_head_forward(out, lse, q, k, v, hl, b, g);
    return;
  }
#pragma omp parallel for collapse(3) schedule(dynamic)
  for (int i = 0; i < nt; i++)
    for (int b = 0; b < hl->B; b++)
      for (int h = 0; h < hl->NH; h++)
        forward_tile(out, lse, q, k, v, hl, b, h, nt - 1 - i, cpu_scratch(forward_floats(hl->hs) * sizeof(float)),
                     NULL);
}

/* ---- Backward ---- */

/* A query tile's operands in the backward: q, dout (TILE x hs) and its lse and D. */
struct query_rows {
  float *q, *dout, *lse, *D;
};

/* Scratch floats of a query_rows: q, dout, out (widened for D), lse and D. */
static size_t query_rows_floats(int hs) { return 3 * (size_t)ATTENTION_TILE * hs + 2 * ATTENTION_TILE; }

static struct query_rows query_rows_at(float *f, int hs) {
  size_t TH = (size_t)ATTENTION_TILE * hs;
  return (struct query_rows){f, f + TH, f + 3 * TH, f + 3 * TH + ATTENTION_TILE};
}

/* Query tile qt of head h in batch b: q, dout, lse, and D = rowsum(dout * out) (out
 * widened into the floats after dout). */
static void query_rows_in(struct query_rows *x, struct tensor q, struct tensor dout, struct tensor out,
                          struct tensor lse, const struct head_layout *hl, int b, int h, struct tile qt) {
  int hs = hl->hs, os = hl->NH * hs;
  float *o = x->dout + (size_t)ATTENTION_TILE * hs;
  size_t oa = head_at(hl, os, b, h) + (size_t)qt.r0 * os;
  rows_in(q, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, qt.n, hs, (size_t)hl->qs, x->q);
  rows_in(dout, oa, qt.n, hs, (size_t)os, x->dout);
  rows_in(out, oa, qt.n, hs, (size_t)os, o);
  const float *l = f32(lse) + ((size_t)b * hl->NH + h) * hl->T + (size_t)qt.r0;
  for (int r = 0; r < qt.n; r++) {
    float d = 0.0f;
    const float *a = x->dout + (size_t)r * hs, *c = o + (size_t)r * hs;
#pragma omp simd reduction(+ : d)
    for (int e = 0; e < hs; e++) d += a[e] * c[e];
    x->D[r] = d;
    x->lse[r] = l[r];
  }
}

/* s (qt.n, kt.n) = p = exp(scores - lse), 0 where masked, unrounded. */
static void probabilities(float *s, const struct query_rows *x, const float *kf, struct tile qt, struct tile kt,
                          int hs, float scale) {
  scores(s, x->q, kf, qt, kt, hs, scale);
  for (int r = 0; r < qt.n; r++) {
    float *row = s + (size_t)r * ATTENTION_TILE, lr = x->lse[r];
    int seen = visible(qt, kt, r);
#pragma omp simd
    for (int c = 0; c < seen; c++) row[c] = expf(row[c] - lr);
    for (int c = seen; c < kt.n; c++) row[c] = 0.0f;
  }
}

/* ds (qt.n, kt.n, in dp's place) = round(p * (dout v^T - D)). */
static void score_grads(float *dp, const float *p, const struct query_rows *x, const float *vf, struct tile qt,
                        struct tile kt, int hs, enum dtype d) {
  onednn_sgemm(0, 1, qt.n, kt.n, hs, 1.0f, x->dout, hs, vf, hs, 0.0f, dp, ATTENTION_TILE);
  for (int r = 0; r < qt.n; r++) {
    float *row = dp + (size_t)r * ATTENTION_TILE, Dr = x->D[r];
    const float *prow = p + (size_t)r * ATTENTION_TILE;
#pragma omp simd
    for (int c = 0; c < kt.n; c++) row[c] = prow[c] * (row[c] - Dr);
    dtype_round(d, row, (size_t)kt.n);
  }
}

/* A backward task's tiles in the thread's scratch: a query_rows, k, v, two gradient sums
 * (TILE x hs, zeroed), p and ds (TILE x TILE). */
struct backward_tiles {
  struct query_rows x;
  float *k, *v, *sum1, *sum2, *p, *ds;
};

static struct backward_tiles backward_tiles_of(int hs) {
  size_t TH = (size_t)ATTENTION_TILE * hs, TT = (size_t)ATTENTION_TILE * ATTENTION_TILE;
  float *f = cpu_scratch((query_rows_floats(hs) + 4 * TH + 2 * TT) * sizeof(float));
  float *k = f + query_rows_floats(hs);
  struct backward_tiles w = {query_rows_at(f, hs), k, k + TH, k + 2 * TH, k + 3 * TH, k + 4 * TH, k + 4 * TH + TT};
  for (size_t e = 0; e < 2 * TH; e++) w.sum1[e] = 0.0f; /* and sum2 */
  return w;
}

/* rows rows of t (each stride apart, the first at first) += src (rows x cols), rounded
 * once; a 16-bit t is widened into row (cols floats) and back. */
static void rows_add(struct tensor t, size_t first, int rows, int cols, size_t stride, const float *src, float *row) {
  for (int r = 0; r < rows; r++) {
    size_t at = first + (size_t)r * stride;
    float *x = span_inout(t, at, (size_t)cols, row);
    for (int j = 0; j < cols; j++) x[j] += src[(size_t)r * cols + j];
    span_store(t, at, (size_t)cols, x);
  }
}

struct backward_args {
  struct tensor dq, dk, dv, dout, out, lse, q, k, v;
  const struct head_layout *hl;
};

/* Key tile kj of kv head g in batch b: dk and dv summed over every query head sharing g
 * and every query tile that sees kj. */
static void kv_tile_backward(const struct backward_args *a, int b, int g, int kj) {
  const struct head_layout *hl = a->hl;
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  float scale = 1.0f / sqrtf((float)hs);
  struct backward_tiles w = backward_tiles_of(hs);
  struct query_rows x = w.x;
  float *kf = w.k, *vf = w.v, *dkf = w.sum1, *dvf = w.sum2, *p = w.p, *ds = w.ds;
  struct tile kt = tile_of(kj, T);
  size_t kva = head_at(hl, hl->kvs, b, g) + (size_t)kt.r0 * hl->kvs;
  kv_tile_in(a->k, a->v, kva, kt, hl, kf, vf);
  for (int h = g * group; h < (g + 1) * group; h++) {
    for (int qi = kj; qi < tiles_of(T); qi++) {
      struct tile qt = tile_of(qi, T);
      query_rows_in(&x, a->q, a->dout, a->out, a->lse, hl, b, h, qt);
      probabilities(p, &x, kf, qt, kt, hs, scale);
      if (a->dk.data) score_grads(ds, p, &x, vf, qt, kt, hs, a->dout.dtype);
      if (a->dv.data) {
        for (int r = 0; r < qt.n; r++) dtype_round(a->dout.dtype, p + (size_t)r * ATTENTION_TILE, (size_t)kt.n);
        onednn_sgemm(1, 0, kt.n, hs, qt.n, 1.0f, p, ATTENTION_TILE, x.dout, hs, 1.0f, dvf, hs);
      }
      if (a->dk.data) onednn_sgemm(1, 0, kt.n, hs, qt.n, scale, ds, ATTENTION_TILE, x.q, hs, 1.0f, dkf, hs);
    }
  }
  float *row = x.q; /* free now: a row's widening */
  if (a->dk.data) rows_add(a->dk, kva, kt.n, hs, (size_t)hl->kvs, dkf, row);
  if (a->dv.data) rows_add(a->dv, kva, kt.n, hs, (size_t)hl->kvs, dvf, row);
}

/* Query tile qi of head h in batch b: dq over the key tiles it sees. */
static void q_tile_backward(const struct backward_args *a, int b, int h, int qi) {
  const struct head_layout *hl = a->hl;
  int T = hl->T, hs = hl->hs;
  float scale = 1.0f / sqrtf((float)hs);
  struct backward_tiles w = backward_tiles_of(hs);
  struct query_rows x = w.x;
  float *kf = w.k, *vf = w.v, *dqf = w.sum1, *row = w.sum2, *p = w.p, *ds = w.ds;
  struct tile qt = tile_of(qi, T);
  size_t kva = head_at(hl, hl->kvs, b, h / (hl->NH / hl->NKV));
  query_rows_in(&x, a->q, a->dout, a->out, a->lse, hl, b, h, qt);
  for (int kj = 0; kj <= qi; kj++) {
    struct tile kt = tile_of(kj, T);
    kv_tile_in(a->k, a->v, kva + (size_t)kt.r0 * hl->kvs, kt, hl, kf, vf);
    probabilities(p, &x, kf, qt, kt, hs, scale);
    score_grads(ds, p, &x, vf, qt, kt, hs, a->dout.dtype);
    onednn_sgemm(0, 0, qt.n, hs, kt.n, scale, ds, ATTENTION_TILE, kf, hs, 1.0f, dqf, hs);
  }
  rows_add(a->dq, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, qt.n, hs, (size_t)hl->qs, dqf, row);
}

/* Every tile of kv head g in batch b in one task: each query tile of each query head
 * sharing g, widened once, against each key tile it sees, k and v widened once for the
 * whole head. The sums run in kv_tile_backward's and q_tile_backward's orders (dk and dv
 * of a key tile over (query head, query tile) in order, dq of a query tile over its key
 * tiles in order), from the same products: the same bits. Scratch: k, v and their
 * gradients for the whole head (4 x T x hs floats), a query tile's, p and ds. */
static void kv_head_backward(const struct backward_args *a, int b, int g) {
  const struct head_layout *hl = a->hl;
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV, nt = tiles_of(T);
  float scale = 1.0f / sqrtf((float)hs);
  size_t TH = (size_t)ATTENTION_TILE * hs, TT = (size_t)ATTENTION_TILE * ATTENTION_TILE, head = (size_t)T * hs;
  float *f = cpu_scratch((query_rows_floats(hs) + TH + 2 * TT + 4 * head) * sizeof(float));
  struct query_rows x = query_rows_at(f, hs);
  float *dqf = f + query_rows_floats(hs), *p = dqf + TH, *ds = p + TT;
  float *kf = ds + TT, *vf = kf + head, *dkf = vf + head, *dvf = dkf + head;
  size_t kva = head_at(hl, hl->kvs, b, g);
  rows_in(a->k, kva, T, hs, (size_t)hl->kvs, kf);
  rows_in(a->v, kva, T, hs, (size_t)hl->kvs, vf);
  for (size_t e = 0; e < 2 * head; e++) dkf[e] = 0.0f; /* and dvf */
  for (int h = g * group; h < (g + 1) * group; h++)
    for (int qi = 0; qi < nt; qi++) {
      struct tile qt = tile_of(qi, T);
      query_rows_in(&x, a->q, a->dout, a->out, a->lse, hl, b, h, qt);
      for (size_t e = 0; e < TH; e++) dqf[e] = 0.0f;
      for (int kj = 0; kj <= qi; kj++) {
        struct tile kt = tile_of(kj, T);
        const float *k = kf + (size_t)kt.r0 * hs, *v = vf + (size_t)kt.r0 * hs;
        probabilities(p, &x, k, qt, kt, hs, scale);
        score_grads(ds, p, &x, v, qt, kt, hs, a->dout.dtype);
        if (a->dv.data) {
          for (int r = 0; r < qt.n; r++) dtype_round(a->dout.dtype, p + (size_t)r * ATTENTION_TILE, (size_t)kt.n);
          onednn_sgemm(1, 0, kt.n, hs, qt.n, 1.0f, p, ATTENTION_TILE, x.dout, hs, 1.0f, dvf + (size_t)kt.r0 * hs, hs);
        }
        if (a->dk.data)
          onednn_sgemm(1, 0, kt.n, hs, qt.n, scale, ds, ATTENTION_TILE, x.q, hs, 1.0f, dkf + (size_t)kt.r0 * hs, hs);
        if (a->dq.data) onednn_sgemm(0, 0, qt.n, hs, kt.n, scale, ds, ATTENTION_TILE, k, hs, 1.0f, dqf, hs);
      }
      if (a->dq.data)
        rows_add(a->dq, head_at(hl, hl->qs, b, h) + (size_t)qt.r0 * hl->qs, qt.n, hs, (size_t)hl->qs, dqf, x.q);
    }
  if (a->dk.data) rows_add(a->dk, kva, T, hs, (size_t)hl->kvs, dkf, x.q);
  if (a->dv.data) rows_add(a->dv, kva, T, hs, (size_t)hl->kvs, dvf, x.q);
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
                            packed_part(a->qkv, C, 2), &hl};
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
  struct backward_args x = {a->dq, a->dk, a->dv, a->dout, a->out, a->lse, a->q, a->k, a->v, &hl};
  attention_backward(&x);
}
