#include <cblas.h>
#include <stddef.h>

#include "cpu.h"

/* Columns per task in the bias gradient, as in layernorm_backward: a thread owns
 * its columns, so no accumulator is shared and rows are read contiguously. */
#define MATMUL_COL_BLOCK 64

/* out (N, OC) = inp (N, C) @ weight^T (C, OC) + bias.
 * The bias is broadcast into out first so that one sgemm with beta = 1 adds the product. */
static void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC) {
  if (bias) {
#pragma omp parallel for
    for (int i = 0; i < N; i++) {
      float *row = out + (size_t)i * OC;
      for (int o = 0; o < OC; o++) row[o] = bias[o];
    }
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out,
              OC);
}

/* dinp (N, C) += dout (N, OC) @ weight (OC, C); dweight (OC, C) += dout^T @ inp;
 * dbias (OC) += column sums of dout. */
static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                     const float *weight, int N, int C, int OC) {
  if (dinp)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
  if (dweight)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
  if (dbias) {
    int nblocks = (OC + MATMUL_COL_BLOCK - 1) / MATMUL_COL_BLOCK;
#pragma omp parallel for
    for (int blk = 0; blk < nblocks; blk++) {
      int o0 = blk * MATMUL_COL_BLOCK;
      int o1 = o0 + MATMUL_COL_BLOCK < OC ? o0 + MATMUL_COL_BLOCK : OC;
      for (int i = 0; i < N; i++) {
        const float *d = dout + (size_t)i * OC;
        for (int o = o0; o < o1; o++) dbias[o] += d[o];
      }
    }
  }
}

void cpu_matmul_forward(void *p) {
  const struct matmul_args *a = p;
  matmul_forward(f32(a->out), f32(a->inp), f32(a->weight), f32(a->bias), rows(a->inp), cols(a->inp),
                 dim(a->weight, 0));
}

void cpu_matmul_backward(void *p) {
  const struct matmul_backward_args *a = p;
  matmul_backward(f32(a->dinp), f32(a->dweight), f32(a->dbias), f32(a->dout), f32(a->inp),
                  f32(a->weight), rows(a->inp), cols(a->inp), dim(a->weight, 0));
}
