/* Attention's heads in bf16 and fp16: the products take the 16-bit tensors where they
 * lie (a head's rows of q, k, v, out and dout, strided; att) on oneDNN matmul primitives
 * of the thread's own, single-threaded inside the heads' parallel region
 * (onednn_matmul_alone), and accumulate in fp32. As FlashAttention does it in 16 bits:
 * the scores, the softmax and its gradient are fp32; the probabilities enter att @ v as
 * att, rounded to the dtype (the stored att, which the backward reads too), and the
 * softmax's gradient enters its two products rounded to the dtype; dq, dk and dv sum in
 * fp32 (dk and dv over the query heads sharing a kv head) and are rounded once. */
#include <math.h>
#include <stdint.h>

#include "attention.h"
#include "onednn.h"
#include "typed.h"

/* A head's rows of t, from element first on. */
static const uint16_t *rows16(struct tensor t, size_t first) { return (const uint16_t *)t.data + first; }

/* s (T, T) fp32 = q k^T, q and k (T, hs) 16-bit rows ldq and ldk elements apart. */
static void scores(float *s, struct tensor q, size_t qa, int ldq, struct tensor k, size_t ka, int ldk, int T,
                   int hs) {
  struct onednn_matmul m = {.dtype = q.dtype, .c_fp32 = 1, .a = onednn_matrix_rows(T, hs, ldq),
                            .b = onednn_transposed_rows(T, hs, ldk), .c = onednn_matrix(T, T)};
  onednn_matmul_alone(&m, rows16(q, qa), rows16(k, ka), NULL, s);
}

/* out (T, hs, rows ldo apart) = p (T, T) @ v (T, hs, rows ldv apart), rounded once. */
static void values(struct tensor out, size_t oa, int ldo, struct tensor p, size_t pa, struct tensor v, size_t va,
                   int ldv, int T, int hs) {
  struct onednn_matmul m = {.dtype = p.dtype, .a = onednn_matrix(T, T), .b = onednn_matrix_rows(T, hs, ldv),
                            .c = onednn_matrix_rows(T, hs, ldo)};
  onednn_matmul_alone(&m, rows16(p, pa), rows16(v, va), NULL, (uint16_t *)out.data + oa);
}

/* c (T, hs) fp32 (+)= x^T y (transpose_x) or x y, x (T, T) contiguous 16-bit, y (T, hs)
 * 16-bit rows ldy apart. */
static void by_weights(float *c, int accumulate, enum dtype d, const uint16_t *x, int transpose_x, const uint16_t *y,
                       int ldy, int T, int hs) {
  struct onednn_matmul m = {.dtype = d, .c_fp32 = 1, .a = transpose_x ? onednn_transposed(T, T) : onednn_matrix(T, T),
                            .b = onednn_matrix_rows(T, hs, ldy), .c = onednn_matrix(T, hs), .accumulate = accumulate};
  onednn_matmul_alone(&m, x, y, NULL, c);
}

/* rows rows of t (cols elements, each stride apart from the one before, the first at
 * first) += scale * src (rows x cols, contiguous), in fp32, rounded once; row: cols floats. */
static void rows_add(struct tensor t, size_t first, int rows, int cols, size_t stride, const float *src, float scale,
                     float *row) {
  for (int r = 0; r < rows; r++) {
    size_t at = first + (size_t)r * stride;
    span_get(t, at, (size_t)cols, row);
    for (int j = 0; j < cols; j++) row[j] += scale * src[(size_t)r * cols + j];
    span_put(t, at, (size_t)cols, row);
  }
}

void attention16_head_forward(struct tensor out, struct tensor att, struct tensor q, struct tensor k, struct tensor v,
                              const struct head_layout *hl, int b, int h) {
  int T = hl->T, hs = hl->hs, os = hl->NH * hs;
  size_t TT = (size_t)T * T, aa = ((size_t)b * hl->NH + h) * TT;
  size_t qa = head_at(hl, hl->qs, b, h), kva = head_at(hl, hl->kvs, b, h / (hl->NH / hl->NKV));
  float *s = cpu_scratch(TT * sizeof(float));
  scores(s, q, qa, hl->qs, k, kva, hl->kvs, T, hs);
  causal_softmax(s, T, 1.0f / sqrtf((float)hs));
  span_put(att, aa, TT, s);
  values(out, head_at(hl, os, b, h), os, att, aa, v, kva, hl->kvs, T, hs);
}

void attention16_group_backward(struct tensor dq, struct tensor dk, struct tensor dv, struct tensor dout,
                                struct tensor q, struct tensor k, struct tensor v, struct tensor att, float *dpre,
                                const struct head_layout *hl, int b, int g) {
  int T = hl->T, hs = hl->hs, os = hl->NH * hs, group = hl->NH / hl->NKV;
  enum dtype d = dout.dtype;
  size_t TT = (size_t)T * T, Ths = (size_t)T * hs, kva = head_at(hl, hl->kvs, b, g);
  float scale = 1.0f / sqrtf((float)hs);
  /* Floats: att widened (T, T), dq's, dk's and dv's sums (T, hs), a row; then dpreatt
   * rounded (T, T 16-bit values). */
  float *p = cpu_scratch((TT + 3 * Ths + (size_t)hs + TT / 2 + 1) * sizeof(float));
  float *dqf = p + TT, *dkf = dqf + Ths, *dvf = dkf + Ths, *row = dvf + Ths;
  uint16_t *ds = (uint16_t *)(row + hs);
  for (size_t i = 0; i < 2 * Ths; i++) dkf[i] = 0.0f; /* and dvf */
  for (int h = g * group; h < (g + 1) * group; h++) {
    size_t qa = head_at(hl, hl->qs, b, h), oa = head_at(hl, os, b, h), aa = ((size_t)b * hl->NH + h) * TT;
    const uint16_t *a16 = rows16(att, aa), *dout16 = rows16(dout, oa);
    if (dv.data) by_weights(dvf, 1, d, a16, 1, dout16, os, T, hs);
    if (!dq.data && !dk.data) continue;
    struct onednn_matmul datt = {.dtype = d, .c_fp32 = 1, .a = onednn_matrix_rows(T, hs, os),
                                 .b = onednn_transposed_rows(T, hs, hl->kvs), .c = onednn_matrix(T, T)};
    onednn_matmul_alone(&datt, dout16, rows16(v, kva), NULL, dpre);
    dtype_unpack(d, a16, p, TT);
    causal_softmax_backward(dpre, p, T);
    dtype_pack(d, dpre, ds, TT);
    if (dq.data) {
      by_weights(dqf, 0, d, ds, 0, rows16(k, kva), hl->kvs, T, hs);
      rows_add(dq, qa, T, hs, (size_t)hl->qs, dqf, scale, row);
    }
    if (dk.data) by_weights(dkf, 1, d, ds, 1, rows16(q, qa), hl->qs, T, hs);
  }
  if (dk.data) rows_add(dk, kva, T, hs, (size_t)hl->kvs, dkf, scale, row);
  if (dv.data) rows_add(dv, kva, T, hs, (size_t)hl->kvs, dvf, 1.0f, row);
}
