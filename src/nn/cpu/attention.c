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

/* ---- An fp32 head's products: matrices whose rows are ld floats apart ----
 * The heads run in one parallel region, each thread its heads' products one after the
 * other with oneDNN's sgemm, single-threaded inside the region, and the softmax between
 * them while the head's scores are in cache. Batched matmul primitives over all heads
 * were slower here: each of their parallel regions waits for the slowest thread, and on
 * shared cores a preempted thread stalled every one of them (docs/benchmarks.md). */

/* s (T, T) = scale * q k^T, q and k (T, hs). It fills the masked upper triangle too,
 * which the softmax overwrites with 0 (cheaper than a gemv per row). */
static void head_scores(float *s, const float *q, int ldq, const float *k, int ldk, int T, int hs, float scale) {
  onednn_sgemm(0, 1, T, T, hs, scale, q, ldq, k, ldk, 0.0f, s, T);
}

/* o (T, hs) = p (T, T) @ v (T, hs). */
static void head_values(float *o, int ldo, const float *p, const float *v, int ldv, int T, int hs) {
  onednn_sgemm(0, 0, T, hs, T, 1.0f, p, T, v, ldv, 0.0f, o, ldo);
}

/* dv += p^T d. */
static void head_values_grad(float *dv, int lddv, const float *p, const float *d, int ldd, int T, int hs) {
  onednn_sgemm(1, 0, T, hs, T, 1.0f, p, T, d, ldd, 1.0f, dv, lddv);
}

/* dp (T, T) = d v^T. */
static void head_weights_grad(float *dp, const float *d, int ldd, const float *v, int ldv, int T, int hs) {
  onednn_sgemm(0, 1, T, T, hs, 1.0f, d, ldd, v, ldv, 0.0f, dp, T);
}

/* dq += scale * ds k. */
static void head_queries_grad(float *dq, int lddq, const float *ds, const float *k, int ldk, int T, int hs,
                              float scale) {
  onednn_sgemm(0, 0, T, hs, T, scale, ds, T, k, ldk, 1.0f, dq, lddq);
}

/* dk += scale * ds^T q. */
static void head_keys_grad(float *dk, int lddk, const float *ds, const float *q, int ldq, int T, int hs, float scale) {
  onednn_sgemm(1, 0, T, hs, T, scale, ds, T, q, ldq, 1.0f, dk, lddk);
}

/* ---- The softmax between them ---- */

void causal_softmax(float *a, int T, float scale) {
  for (int t = 0; t < T; t++) {
    float *row = a + (size_t)t * T;
    float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
    for (int s = 0; s <= t; s++) maxval = row[s] * scale > maxval ? row[s] * scale : maxval;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int s = 0; s <= t; s++) {
      row[s] = expf(row[s] * scale - maxval);
      sum += row[s];
    }
    float inv = 1.0f / sum;
    for (int s = 0; s <= t; s++) row[s] *= inv;
    for (int s = t + 1; s < T; s++) row[s] = 0.0f;
  }
}

void causal_softmax_backward(float *datt, const float *att, int T) {
  for (int t = 0; t < T; t++) {
    const float *arow = att + (size_t)t * T;
    float *row = datt + (size_t)t * T;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int s = 0; s <= t; s++) dot += arow[s] * row[s];
    for (int s = 0; s <= t; s++) row[s] = arow[s] * (row[s] - dot);
    for (int s = t + 1; s < T; s++) row[s] = 0.0f;
  }
}

/* ---- One head ---- */

/* A (b, h)'s fp32 operands, each matrix with the distance between its rows. */
struct head {
  const float *q, *k, *v;
  int ldq, ldkv;
  float *att; /* (T, T) */
  float *out;
  int ldo;
};

/* att = softmax_causal(q k^T / sqrt(hs)), out = att @ v. */
static void head_forward(const struct head *x, int T, int hs, float scale) {
  head_scores(x->att, x->q, x->ldq, x->k, x->ldkv, T, hs, scale);
  causal_softmax(x->att, T, 1.0f);
  head_values(x->out, x->ldo, x->att, x->v, x->ldkv, T, hs);
}

/* A (b, h)'s fp32 operands in the backward; an absent gradient is NULL. */
struct head_grad {
  const float *q, *k, *v, *att, *dout;
  int ldq, ldkv, ldo;
  float *dq, *dk, *dv;
};

/* dv += att^T dout; datt = dout v^T; dpreatt = softmax backward of datt;
 * dq += dpreatt k / sqrt(hs); dk += dpreatt^T q / sqrt(hs). dpre: (T, T) scratch. */
static void head_backward(const struct head_grad *x, float *dpre, int T, int hs, float scale) {
  if (x->dv) head_values_grad(x->dv, x->ldkv, x->att, x->dout, x->ldo, T, hs);
  if (!x->dq && !x->dk) return;
  head_weights_grad(dpre, x->dout, x->ldo, x->v, x->ldkv, T, hs);
  causal_softmax_backward(dpre, x->att, T);
  if (x->dq) head_queries_grad(x->dq, x->ldq, dpre, x->k, x->ldkv, T, hs, scale);
  if (x->dk) head_keys_grad(x->dk, x->ldkv, dpre, x->q, x->ldq, T, hs, scale);
}

/* ---- All heads ---- */

/* An fp32 call computes on its tensors in place; a 16-bit one is attention16.c's. */
static void attention_forward(struct tensor out, struct tensor att, struct tensor q, struct tensor k,
                              struct tensor v, const struct head_layout *hl) {
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  int os = hl->NH * hs;
  size_t TT = (size_t)T * T;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2)
  for (int b = 0; b < hl->B; b++) {
    for (int h = 0; h < hl->NH; h++) {
      if (out.dtype != DTYPE_F32) {
        attention16_head_forward(out, att, q, k, v, hl, b, h);
        continue;
      }
      size_t qa = head_at(hl, hl->qs, b, h), kva = head_at(hl, hl->kvs, b, h / group), oa = head_at(hl, os, b, h);
      size_t aa = ((size_t)b * hl->NH + h) * TT;
      struct head x = {f32(q) + qa, f32(k) + kva, f32(v) + kva, hl->qs, hl->kvs, f32(att) + aa, f32(out) + oa, os};
      head_forward(&x, T, hs, scale);
    }
  }
}

/* The backward's datt/dpreatt, one (T, T) per thread. */
size_t cpu_attention_backward_scratch(const struct tensor *att) {
  return (size_t)nn_num_threads() * att->shape[2] * att->shape[3] * sizeof(float);
}

/* A task owns a kv head and runs the query heads sharing it one after another, so no
 * two threads add to the same dk or dv. */
static void attention_backward(struct tensor dq, struct tensor dk, struct tensor dv, struct tensor dout,
                               struct tensor q, struct tensor k, struct tensor v, struct tensor att, float *scratch,
                               const struct head_layout *hl) {
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  int os = hl->NH * hs;
  size_t TT = (size_t)T * T;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2)
  for (int b = 0; b < hl->B; b++) {
    for (int g = 0; g < hl->NKV; g++) {
      float *dpre = scratch + (size_t)omp_get_thread_num() * TT;
      if (dout.dtype != DTYPE_F32) {
        attention16_group_backward(dq, dk, dv, dout, q, k, v, att, dpre, hl, b, g);
        continue;
      }
      size_t kva = head_at(hl, hl->kvs, b, g);
      for (int h = g * group; h < (g + 1) * group; h++) {
        size_t qa = head_at(hl, hl->qs, b, h), oa = head_at(hl, os, b, h);
        struct head_grad x = {f32(q) + qa, f32(k) + kva, f32(v) + kva, f32(att) + ((size_t)b * hl->NH + h) * TT,
                              f32(dout) + oa, hl->qs, hl->kvs, os, dq.data ? f32(dq) + qa : NULL,
                              dk.data ? f32(dk) + kva : NULL, dv.data ? f32(dv) + kva : NULL};
        head_backward(&x, dpre, T, hs, scale);
      }
    }
  }
}

/* GPT-2's packed qkv (B, T, 3C): q, k and v side by side in each row, NKV = NH. */
static struct head_layout packed_heads(struct tensor att, int C) {
  int NH = dim(att, 1);
  return (struct head_layout){dim(att, 0), dim(att, 2), NH, NH, C / NH, 3 * C, 3 * C};
}

/* Llama's q (B, T, NH, hd), k and v (B, T, NKV, hd). */
static struct head_layout gqa_heads(struct tensor q, struct tensor k) {
  return (struct head_layout){dim(q, 0), dim(q, 1), dim(q, 2), dim(k, 2), dim(q, 3), dim(q, 2) * dim(q, 3),
                              dim(k, 2) * dim(k, 3)};
}

/* Part i (0: q, 1: k, 2: v) of a packed qkv (B, T, 3C), or of its gradient: a view from
 * its first element on, whose positions are 3C apart. */
static struct tensor packed_part(struct tensor qkv, int C, int i) {
  size_t first = (size_t)i * C;
  return tensor_slice(&qkv, first, tensor_numel(&qkv) - first);
}

void cpu_attention_forward(void *p) {
  const struct attention_args *a = p;
  int C = cols(a->out);
  struct head_layout hl = packed_heads(a->att, C);
  attention_forward(a->out, a->att, packed_part(a->qkv, C, 0), packed_part(a->qkv, C, 1), packed_part(a->qkv, C, 2),
                    &hl);
}

void cpu_attention_backward(void *p) {
  const struct attention_backward_args *a = p;
  if (!a->dqkv.data) return;
  int C = cols(a->dout);
  struct head_layout hl = packed_heads(a->att, C);
  attention_backward(packed_part(a->dqkv, C, 0), packed_part(a->dqkv, C, 1), packed_part(a->dqkv, C, 2), a->dout,
                     packed_part(a->qkv, C, 0), packed_part(a->qkv, C, 1), packed_part(a->qkv, C, 2), a->att,
                     a->scratch, &hl);
}

void cpu_gqa_attention_forward(void *p) {
  const struct gqa_attention_args *a = p;
  struct head_layout hl = gqa_heads(a->q, a->k);
  attention_forward(a->out, a->att, a->q, a->k, a->v, &hl);
}

void cpu_gqa_attention_backward(void *p) {
  const struct gqa_attention_backward_args *a = p;
  struct head_layout hl = gqa_heads(a->q, a->k);
  attention_backward(a->dq, a->dk, a->dv, a->dout, a->q, a->k, a->v, a->att, a->scratch, &hl);
}
