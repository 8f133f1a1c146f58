#include <math.h>
#include <omp.h>
#include <stddef.h>

#include "cpu.h"
#include "onednn.h"

/* As in gelu.c: declaring expf an OpenMP simd function lets the softmax call
 * glibc's vector expf without -ffast-math. */
#pragma omp declare simd notinbranch
float expf(float x);

/* Where the heads of one call live, so that GPT-2's packed qkv and Llama's separate
 * q, k, v share the kernels: q, k and v are (B, T, heads, hs) views whose positions
 * are qs and kvs floats apart (3C for all three in a packed qkv); NH query heads share
 * NKV kv heads, query head h using kv head h / (NH / NKV). out is (B, T, NH * hs). */
struct head_layout {
  int B, T, NH, NKV, hs, qs, kvs;
};

/* The heads run in one parallel region, each thread its heads' products one after the
 * other with oneDNN's sgemm, single-threaded inside the region, and the softmax between
 * them while the head's scores are in cache. Batched matmul primitives over all heads
 * were slower here: each of their parallel regions waits for the slowest thread, and
 * on shared cores a preempted thread stalled every one of them (docs/benchmarks.md). */

/* Where head h of batch b starts in a view whose positions are stride floats apart. */
static size_t at(const struct head_layout *hl, int stride, int b, int h) {
  return (size_t)b * hl->T * stride + (size_t)h * hl->hs;
}

/* For each (b, h): att = softmax_causal(q k^T / sqrt(hs)), out = att @ v.
 * The scores are computed straight into att; the sgemm fills the masked upper
 * triangle too, which the softmax overwrites with 0 (cheaper than per-row gemv). */
static void attention_forward(float *out, float *att, const float *qb, const float *kb, const float *vb,
                              const struct head_layout *hl) {
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  int os = hl->NH * hs;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2)
  for (int b = 0; b < hl->B; b++) {
    for (int h = 0; h < hl->NH; h++) {
      const float *q = qb + at(hl, hl->qs, b, h);
      const float *k = kb + at(hl, hl->kvs, b, h / group);
      const float *v = vb + at(hl, hl->kvs, b, h / group);
      float *a = att + ((size_t)b * hl->NH + h) * T * T;
      onednn_sgemm(0, 1, T, T, hs, scale, q, hl->qs, k, hl->kvs, 0.0f, a, T);
      for (int t = 0; t < T; t++) {
        float *row = a + (size_t)t * T;
        float maxval = -INFINITY;
#pragma omp simd reduction(max : maxval)
        for (int s = 0; s <= t; s++) maxval = row[s] > maxval ? row[s] : maxval;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int s = 0; s <= t; s++) {
          row[s] = expf(row[s] - maxval);
          sum += row[s];
        }
        float inv = 1.0f / sum;
        for (int s = 0; s <= t; s++) row[s] *= inv;
        for (int s = t + 1; s < T; s++) row[s] = 0.0f;
      }
      float *o = out + at(hl, os, b, h);
      onednn_sgemm(0, 0, T, hs, T, 1.0f, a, T, v, hl->kvs, 0.0f, o, os);
    }
  }
}

/* For each (b, h): datt = dout v^T; dv += att^T dout;
 * dpreatt = att * (datt - rowsum(att * datt)) (softmax backward; 0 where masked);
 * dq += dpreatt k / sqrt(hs); dk += dpreatt^T q / sqrt(hs). A task owns a kv head
 * and runs the query heads sharing it one after another, so no two threads add to
 * the same dk or dv. Absent gradients (NULL) are skipped.
 * datt/dpreatt live in one T x T scratch per thread (cpu_attention_backward_scratch). */
size_t cpu_attention_backward_scratch(const struct tensor *att) {
  return (size_t)nn_num_threads() * att->shape[2] * att->shape[3] * sizeof(float);
}

static void attention_backward(float *dqb, float *dkb, float *dvb, const float *dout, const float *qb,
                               const float *kb, const float *vb, const float *att, float *scratch,
                               const struct head_layout *hl) {
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  int os = hl->NH * hs;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2)
  for (int b = 0; b < hl->B; b++) {
    for (int g = 0; g < hl->NKV; g++) {
      float *dpre = scratch + (size_t)omp_get_thread_num() * T * T;
      const float *k = kb + at(hl, hl->kvs, b, g);
      const float *v = vb + at(hl, hl->kvs, b, g);
      float *dk = dkb ? dkb + at(hl, hl->kvs, b, g) : NULL;
      float *dv = dvb ? dvb + at(hl, hl->kvs, b, g) : NULL;
      for (int h = g * group; h < (g + 1) * group; h++) {
        const float *q = qb + at(hl, hl->qs, b, h);
        float *dq = dqb ? dqb + at(hl, hl->qs, b, h) : NULL;
        const float *a = att + ((size_t)b * hl->NH + h) * T * T;
        const float *d = dout + at(hl, os, b, h);
        if (dv)
          onednn_sgemm(1, 0, T, hs, T, 1.0f, a, T, d, os, 1.0f, dv, hl->kvs);
        if (!dq && !dk) continue;
        onednn_sgemm(0, 1, T, T, hs, 1.0f, d, os, v, hl->kvs, 0.0f, dpre, T);
        for (int t = 0; t < T; t++) {
          const float *arow = a + (size_t)t * T;
          float *row = dpre + (size_t)t * T;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int s = 0; s <= t; s++) dot += arow[s] * row[s];
          for (int s = 0; s <= t; s++) row[s] = arow[s] * (row[s] - dot);
          for (int s = t + 1; s < T; s++) row[s] = 0.0f;
        }
        if (dq)
          onednn_sgemm(0, 0, T, hs, T, scale, dpre, T, k, hl->kvs, 1.0f, dq, hl->qs);
        if (dk)
          onednn_sgemm(1, 0, T, hs, T, scale, dpre, T, q, hl->qs, 1.0f, dk, hl->kvs);
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

void cpu_attention_forward(void *p) {
  const struct attention_args *a = p;
  int C = cols(a->out);
  struct head_layout hl = packed_heads(a->att, C);
  const float *qkv = f32(a->qkv);
  attention_forward(f32(a->out), f32(a->att), qkv, qkv + C, qkv + 2 * C, &hl);
}

void cpu_attention_backward(void *p) {
  const struct attention_backward_args *a = p;
  if (!a->dqkv.data) return;
  int C = cols(a->dout);
  struct head_layout hl = packed_heads(a->att, C);
  const float *qkv = f32(a->qkv);
  float *dqkv = f32(a->dqkv);
  attention_backward(dqkv, dqkv + C, dqkv + 2 * C, f32(a->dout), qkv, qkv + C, qkv + 2 * C, f32(a->att), a->scratch,
                     &hl);
}

void cpu_gqa_attention_forward(void *p) {
  const struct gqa_attention_args *a = p;
  struct head_layout hl = gqa_heads(a->q, a->k);
  attention_forward(f32(a->out), f32(a->att), f32(a->q), f32(a->k), f32(a->v), &hl);
}

void cpu_gqa_attention_backward(void *p) {
  const struct gqa_attention_backward_args *a = p;
  struct head_layout hl = gqa_heads(a->q, a->k);
  attention_backward(f32_or_null(a->dq), f32_or_null(a->dk), f32_or_null(a->dv), f32(a->dout), f32(a->q),
                     f32(a->k), f32(a->v), f32(a->att), a->scratch, &hl);
}
