#include <math.h>
#include <stddef.h>
#include <stdint.h>

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

/* The products run batched over (B, NKV), one call per query head of a kv group:
 * member g of every group is query head kv * group + g, so its heads are group * hs
 * floats apart in a row and its pointer starts g * hs in. A kv head's q-side operands
 * (q, dq, out, dout) are such views; k, v, dk and dv have step 1. */
static struct onednn_operand heads(const struct head_layout *hl, int64_t stride, int64_t step) {
  return (struct onednn_operand){{hl->B, hl->NKV, hl->T, hl->hs}, {hl->T * stride, step * hl->hs, stride, 1}};
}

/* The same heads as (hs, T) matrices. */
static struct onednn_operand heads_transposed(const struct head_layout *hl, int64_t stride, int64_t step) {
  return (struct onednn_operand){{hl->B, hl->NKV, hl->hs, hl->T}, {hl->T * stride, step * hl->hs, 1, stride}};
}

/* Member g's (T, T) scores in att (B, NH, T, T), from att + g * T * T, or their transposes. */
static struct onednn_operand scores(const struct head_layout *hl, int transposed) {
  int64_t T = hl->T, group = hl->NH / hl->NKV;
  return (struct onednn_operand){{hl->B, hl->NKV, T, T},
                                 {hl->NH * T * T, group * T * T, transposed ? 1 : T, transposed ? T : 1}};
}

/* c (+)= alpha * a @ b over the (B, NKV) heads, in fp32. */
static void heads_product(struct onednn_operand a, struct onednn_operand b, struct onednn_operand c, float alpha,
                          int accumulate, const float *pa, const float *pb, float *pc) {
  struct onednn_matmul m = {.ndims = 4, .dtype = DTYPE_F32, .c_dtype = DTYPE_F32, .a = a, .b = b, .c = c,
                            .accumulate = accumulate, .alpha = alpha};
  onednn_matmul(&m, pa, pb, NULL, pc);
}

/* att = softmax_causal(q k^T / sqrt(hs)), out = att @ v. The scores are computed for the
 * whole (T, T) square; the softmax overwrites the masked upper triangle with 0. */
static void attention_forward(float *out, float *att, const float *q, const float *k, const float *v,
                              const struct head_layout *hl) {
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  int64_t os = (int64_t)hl->NH * hs, TT = (int64_t)T * T;
  float scale = 1.0f / sqrtf((float)hs);
  for (int g = 0; g < group; g++)
    heads_product(heads(hl, hl->qs, group), heads_transposed(hl, hl->kvs, 1), scores(hl, 0), scale, 0,
                  q + g * hs, k, att + g * TT);
  int64_t nrows = (int64_t)hl->B * hl->NH * T;
#pragma omp parallel for
  for (int64_t r = 0; r < nrows; r++) {
    int t = (int)(r % T);
    float *row = att + r * T;
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
  for (int g = 0; g < group; g++)
    heads_product(scores(hl, 0), heads(hl, hl->kvs, 1), heads(hl, os, group), 1.0f, 0, att + g * TT, v,
                  out + g * hs);
}

/* datt = dout v^T; dv += att^T dout; dpreatt = att * (datt - rowsum(att * datt))
 * (softmax backward; 0 where masked); dq += dpreatt k / sqrt(hs); dk += dpreatt^T q / sqrt(hs).
 * dk and dv take the sum over a group's query heads, added one head after another.
 * Absent gradients (NULL) are skipped. datt/dpreatt live in scratch, one (T, T) per
 * head (cpu_attention_backward_scratch): as large as att. */
size_t cpu_attention_backward_scratch(const struct tensor *att) { return tensor_numel(att) * sizeof(float); }

static void attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                               const float *v, const float *att, float *dpre, const struct head_layout *hl) {
  int T = hl->T, hs = hl->hs, group = hl->NH / hl->NKV;
  int64_t os = (int64_t)hl->NH * hs, TT = (int64_t)T * T;
  float scale = 1.0f / sqrtf((float)hs);
  for (int g = 0; dv && g < group; g++)
    heads_product(scores(hl, 1), heads(hl, os, group), heads(hl, hl->kvs, 1), 1.0f, 1, att + g * TT,
                  dout + g * hs, dv);
  if (!dq && !dk) return;
  for (int g = 0; g < group; g++)
    heads_product(heads(hl, os, group), heads_transposed(hl, hl->kvs, 1), scores(hl, 0), 1.0f, 0, dout + g * hs,
                  v, dpre + g * TT);
  int64_t nrows = (int64_t)hl->B * hl->NH * T;
#pragma omp parallel for
  for (int64_t r = 0; r < nrows; r++) {
    int t = (int)(r % T);
    const float *arow = att + r * T;
    float *row = dpre + r * T;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int s = 0; s <= t; s++) dot += arow[s] * row[s];
    for (int s = 0; s <= t; s++) row[s] = arow[s] * (row[s] - dot);
    for (int s = t + 1; s < T; s++) row[s] = 0.0f;
  }
  for (int g = 0; dq && g < group; g++)
    heads_product(scores(hl, 0), heads(hl, hl->kvs, 1), heads(hl, hl->qs, group), scale, 1, dpre + g * TT, k,
                  dq + g * hs);
  for (int g = 0; dk && g < group; g++)
    heads_product(scores(hl, 1), heads(hl, hl->qs, group), heads(hl, hl->kvs, 1), scale, 1, dpre + g * TT,
                  q + g * hs, dk);
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
