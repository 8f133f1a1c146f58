#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cpu.h"
#include "onednn.h"

/* Columns per task in the bias gradient, as in layernorm_backward: a thread owns
 * its columns, so no accumulator is shared and rows are read contiguously. */
#define MATMUL_COL_BLOCK 64

/* The op's float tensors share one dtype (fp32, bf16 or fp16): its products accumulate
 * in fp32 inside oneDNN, and each output is rounded once. */
static enum dtype float_dtype(struct tensor t) {
  FSDP_CHECK(t.data && (t.dtype == DTYPE_F32 || t.dtype == DTYPE_BF16 || t.dtype == DTYPE_F16));
  return t.dtype;
}

static void required(struct tensor t, enum dtype d) { FSDP_CHECK(t.data && t.dtype == d); }
/* A bias, or a gradient nobody needs: absent, or in the op's dtype. */
static void optional(struct tensor t, enum dtype d) { FSDP_CHECK(!t.data || t.dtype == d); }

/* out (N, OC) = inp (N, C) @ weight^T (C, OC) + bias, the bias added by the primitive. */
void cpu_matmul_forward(void *p) {
  const struct matmul_args *a = p;
  enum dtype d = float_dtype(a->inp);
  required(a->out, d), required(a->weight, d), optional(a->bias, d);
  int64_t N = rows(a->inp), C = cols(a->inp), OC = dim(a->weight, 0);
  struct onednn_matmul m = {.dtype = d, .a = onednn_matrix(N, C), .b = onednn_transposed(OC, C),
                            .c = onednn_matrix(N, OC), .bias = a->bias.data != NULL};
  onednn_matmul(&m, a->inp.data, a->weight.data, a->bias.data, a->out.data);
}

/* Widening bf16 is a shift: inlined here, as the bias gradient reads every element of dout. */
static inline float bf16_value(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float x;
  memcpy(&x, &bits, sizeof x);
  return x;
}

static float load(const void *x, enum dtype d, size_t i) {
  switch (d) {
  case DTYPE_BF16: return bf16_value(((const uint16_t *)x)[i]);
  case DTYPE_F16: return f16_to_f32(((const uint16_t *)x)[i]);
  default: return ((const float *)x)[i];
  }
}

static void store(void *x, enum dtype d, size_t i, float v) {
  switch (d) {
  case DTYPE_BF16: ((uint16_t *)x)[i] = f32_to_bf16(v); break;
  case DTYPE_F16: ((uint16_t *)x)[i] = f32_to_f16(v); break;
  default: ((float *)x)[i] = v;
  }
}

/* sum[o] += x[i, o0 + o] for every row i of x (N, OC), o < n: one loop per dtype, so
 * that each vectorises. */
static void add_columns(float *sum, const void *x, enum dtype d, int N, int OC, int o0, int n) {
  for (int i = 0; i < N; i++) {
    size_t at = (size_t)i * OC + o0;
    if (d == DTYPE_F32) {
      const float *row = (const float *)x + at;
      for (int o = 0; o < n; o++) sum[o] += row[o];
    } else if (d == DTYPE_BF16) {
      const uint16_t *row = (const uint16_t *)x + at;
      for (int o = 0; o < n; o++) sum[o] += bf16_value(row[o]);
    } else {
      const uint16_t *row = (const uint16_t *)x + at;
      for (int o = 0; o < n; o++) sum[o] += f16_to_f32(row[o]);
    }
  }
}

/* dbias (OC) += column sums of dout (N, OC), summed in fp32 and rounded once. */
static void bias_backward(void *dbias, const void *dout, enum dtype d, int N, int OC) {
  int nblocks = (OC + MATMUL_COL_BLOCK - 1) / MATMUL_COL_BLOCK;
#pragma omp parallel for
  for (int blk = 0; blk < nblocks; blk++) {
    int o0 = blk * MATMUL_COL_BLOCK;
    int n = o0 + MATMUL_COL_BLOCK < OC ? MATMUL_COL_BLOCK : OC - o0;
    float sum[MATMUL_COL_BLOCK];
    for (int o = 0; o < n; o++) sum[o] = load(dbias, d, (size_t)o0 + o);
    add_columns(sum, dout, d, N, OC, o0, n);
    for (int o = 0; o < n; o++) store(dbias, d, (size_t)o0 + o, sum[o]);
  }
}

/* dinp (N, C) += dout (N, OC) @ weight (OC, C); dweight (OC, C) += dout^T @ inp;
 * dbias (OC) += column sums of dout. The products accumulate through the primitive's
 * sum post-op, which adds the old value in fp32 before the one rounding. */
void cpu_matmul_backward(void *p) {
  const struct matmul_backward_args *a = p;
  enum dtype d = float_dtype(a->dout);
  required(a->inp, d), required(a->weight, d);
  optional(a->dinp, d), optional(a->dweight, d), optional(a->dbias, d);
  int64_t N = rows(a->inp), C = cols(a->inp), OC = dim(a->weight, 0);
  if (a->dinp.data) {
    struct onednn_matmul m = {.dtype = d, .a = onednn_matrix(N, OC),
                              .b = onednn_matrix(OC, C), .c = onednn_matrix(N, C), .accumulate = 1};
    onednn_matmul(&m, a->dout.data, a->weight.data, NULL, a->dinp.data);
  }
  if (a->dweight.data) {
    struct onednn_matmul m = {.dtype = d, .a = onednn_transposed(N, OC),
                              .b = onednn_matrix(N, C), .c = onednn_matrix(OC, C), .accumulate = 1};
    onednn_matmul(&m, a->dout.data, a->inp.data, NULL, a->dweight.data);
  }
  if (a->dbias.data) bias_backward(a->dbias.data, a->dout.data, d, (int)N, (int)OC);
}
