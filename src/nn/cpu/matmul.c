/* The linear layer, its products on oneDNN (onednn.h), in the op's compute dtype (fp32,
 * bf16 or fp16: the contract's), accumulating in fp32 and rounding each output once. */
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"
#include "onednn.h"
#include "typed.h"

/* Columns per task in the bias gradient, as in layernorm_backward: a thread owns
 * its columns, so no accumulator is shared and rows are read contiguously. */
#define MATMUL_COL_BLOCK 64

/* out (N, OC) = inp (N, C) @ weight^T (C, OC) + bias, the bias added by the primitive. */
void cpu_matmul_forward(void *p) {
  const struct matmul_args *a = p;
  int64_t N = rows(a->inp), C = cols(a->inp), OC = dim(a->weight, 0);
  struct onednn_matmul m = {.dtype = a->inp.dtype, .a = onednn_matrix(N, C), .b = onednn_transposed(OC, C),
                            .c = onednn_matrix(N, OC), .bias = a->bias.data != NULL};
  onednn_matmul(&m, a->inp.data, a->weight.data, a->bias.data, a->out.data);
}

/* dbias (OC) += column sums of dout (N, OC), summed in fp32 over every row and rounded once. */
static void bias_backward(struct tensor dbias, struct tensor dout, int N, int OC) {
  int nblocks = (OC + MATMUL_COL_BLOCK - 1) / MATMUL_COL_BLOCK;
#pragma omp parallel for
  for (int blk = 0; blk < nblocks; blk++) {
    int o0 = blk * MATMUL_COL_BLOCK;
    int n = o0 + MATMUL_COL_BLOCK < OC ? MATMUL_COL_BLOCK : OC - o0;
    float sum[MATMUL_COL_BLOCK], *buf = span_scratch(dout.dtype, SUM_ROWS * MATMUL_COL_BLOCK);
    span_get(dbias, (size_t)o0, (size_t)n, sum);
    for (int i0 = 0; i0 < N; i0 += SUM_ROWS) {
      int m = N - i0 < SUM_ROWS ? N - i0 : SUM_ROWS;
      size_t ld;
      const float *d = rows_view(dout, (size_t)i0 * OC + o0, m, n, (size_t)OC, buf, &ld);
      for (int i = 0; i < m; i++)
        for (int o = 0; o < n; o++) sum[o] += d[i * ld + o];
    }
    span_put(dbias, (size_t)o0, (size_t)n, sum);
  }
}

/* dinp (N, C) += dout (N, OC) @ weight (OC, C) (or =, NN_GRAD_SET); dweight (OC, C) +=
 * dout^T @ inp; dbias (OC) += column sums of dout. The products accumulate through the
 * primitive's sum post-op, which adds the old value in fp32 before the one rounding. */
void cpu_matmul_backward(void *p) {
  const struct matmul_backward_args *a = p;
  enum dtype d = a->dout.dtype;
  int64_t N = rows(a->inp), C = cols(a->inp), OC = dim(a->weight, 0);
  if (a->dinp.data) {
    struct onednn_matmul m = {.dtype = d, .a = onednn_matrix(N, OC),
                              .b = onednn_matrix(OC, C), .c = onednn_matrix(N, C),
                              .accumulate = a->dinp_mode == NN_GRAD_ADD};
    onednn_matmul(&m, a->dout.data, a->weight.data, NULL, a->dinp.data);
  }
  if (a->dweight.data) {
    struct onednn_matmul m = {.dtype = d, .a = onednn_transposed(N, OC),
                              .b = onednn_matrix(N, C), .c = onednn_matrix(OC, C), .accumulate = 1};
    onednn_matmul(&m, a->dout.data, a->inp.data, NULL, a->dweight.data);
  }
  if (a->dbias.data) bias_backward(a->dbias, a->dout, (int)N, (int)OC);
}
