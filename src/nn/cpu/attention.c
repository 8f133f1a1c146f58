#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stddef.h>

#include "cpu.h"

/* As in gelu.c: declaring expf an OpenMP simd function lets the softmax call
 * glibc's vector expf without -ffast-math. */
#pragma omp declare simd notinbranch
float expf(float x);

/* Whether the (b, h) loop may run its sgemms from several threads at once. A
 * pthreads OpenBLAS with more than one thread runs concurrent calls one at a
 * time on a global lock while its own threads fight the OpenMP ones for the
 * cores (about 10x slower); there the loop stays serial and OpenBLAS
 * parallelises each sgemm instead. An OpenMP OpenBLAS goes single-threaded
 * inside a parallel region by itself. */
static int parallel_heads(void) { return openblas_get_parallel() != 1 || openblas_get_num_threads() == 1; }

/* For each (b, h), with q, k, v the (T, hs) views of qkv (row stride 3C):
 * att = softmax_causal(q k^T / sqrt(hs)), out = att @ v.
 * The scores are computed straight into att; the sgemm fills the masked upper
 * triangle too, which the softmax overwrites with 0 (cheaper than per-row gemv). */
static void attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
  int hs = C / NH;
  int C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) if (parallel_heads())
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hs;
      const float *k = q + C;
      const float *v = q + 2 * C;
      float *a = att + ((size_t)b * NH + h) * T * T;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3, 0.0f, a, T);
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
      float *o = out + (size_t)b * T * C + (size_t)h * hs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, C3, 0.0f, o, C);
    }
  }
}

/* For each (b, h): datt = dout v^T; dv += att^T dout;
 * dpreatt = att * (datt - rowsum(att * datt)) (softmax backward; 0 where masked);
 * dq += dpreatt k / sqrt(hs); dk += dpreatt^T q / sqrt(hs).
 * datt/dpreatt live in one T x T scratch per thread (cpu_attention_backward_scratch). */
size_t cpu_attention_backward_scratch(const struct tensor *att) {
  return (size_t)nn_num_threads() * att->shape[2] * att->shape[3] * sizeof(float);
}

static void attention_backward(float *dqkv, const float *dout, const float *qkv, const float *att, float *scratch,
                               int B, int T, int C, int NH) {
  int hs = C / NH;
  int C3 = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) if (parallel_heads())
  for (int b = 0; b < B; b++) {
    for (int h = 0; h < NH; h++) {
      float *dpre = scratch + (size_t)omp_get_thread_num() * T * T;
      const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hs;
      const float *k = q + C;
      const float *v = q + 2 * C;
      float *dq = dqkv + (size_t)b * T * C3 + (size_t)h * hs;
      float *dk = dq + C;
      float *dv = dq + 2 * C;
      const float *a = att + ((size_t)b * NH + h) * T * T;
      const float *d = dout + (size_t)b * T * C + (size_t)h * hs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, d, C, v, C3, 0.0f, dpre, T);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, d, C, 1.0f, dv, C3);
      for (int t = 0; t < T; t++) {
        const float *arow = a + (size_t)t * T;
        float *row = dpre + (size_t)t * T;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int s = 0; s <= t; s++) dot += arow[s] * row[s];
        for (int s = 0; s <= t; s++) row[s] = arow[s] * (row[s] - dot);
        for (int s = t + 1; s < T; s++) row[s] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, dpre, T, k, C3, 1.0f, dq, C3);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, dpre, T, q, C3, 1.0f, dk, C3);
    }
  }
}

void cpu_attention_forward(void *p) {
  const struct attention_args *a = p;
  attention_forward(f32(a->out), f32(a->att), f32(a->qkv), dim(a->att, 0), dim(a->att, 2), cols(a->out),
                    dim(a->att, 1));
}

void cpu_attention_backward(void *p) {
  const struct attention_backward_args *a = p;
  if (!a->dqkv.data) return;
  attention_backward(f32(a->dqkv), f32(a->dout), f32(a->qkv), f32(a->att), a->scratch, dim(a->att, 0),
                     dim(a->att, 2), cols(a->dout), dim(a->att, 1));
}
