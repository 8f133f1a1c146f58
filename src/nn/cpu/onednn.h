/* Private to src/nn/cpu: the CPU's matrix products, on oneDNN's matmul primitive.
 *
 * c = alpha * a @ b (+ bias) (+ c), over up to ONEDNN_MAX_DIMS dimensions: the last two
 * are the matrices (a: M x K, b: K x N, c: M x N), the others batch them, and a batch
 * dimension of size 1 in a or b is broadcast over c's. Any strides, in elements, so that
 * a transposed operand or a head inside a packed row is only a layout. a, b and bias share
 * one dtype (fp32, bf16 or fp16), c may be fp32 or that dtype; the products accumulate in
 * fp32 and c is rounded once.
 *
 * A primitive is created the first time a problem is seen and kept for the process:
 * a steady step creates none. Products run one at a time on the calling thread's OpenMP
 * team (OMP_NUM_THREADS), the pool the other CPU kernels use; inside a parallel region
 * they run single-threaded. */
#ifndef FSDP_NN_CPU_ONEDNN_H
#define FSDP_NN_CPU_ONEDNN_H

#include <stdint.h>

#include "fsdp/dtype.h"

enum { ONEDNN_MAX_DIMS = 5 };

struct onednn_operand {
  int64_t dims[ONEDNN_MAX_DIMS], strides[ONEDNN_MAX_DIMS];
};

/* The problem, which is also the key of its primitive: all 8-byte fields, no padding,
 * so that two problems are the same exactly when their bytes are. Unused dimensions and
 * fields are zero: build it with a designated initialiser. */
struct onednn_matmul {
  int64_t ndims;
  int64_t dtype, c_dtype; /* enum dtype */
  struct onednn_operand a, b, c;
  int64_t bias;       /* 1: bias (N values, dtype) is added to every row of c */
  int64_t accumulate; /* 1: c += the product, 0: c = the product */
  double alpha;       /* scales the product, not the bias or the old c: 1 for none */
};

/* A row-major matrix (rows, cols), or its transpose seen as a (cols, rows) matrix. */
struct onednn_operand onednn_matrix(int64_t rows, int64_t cols);
struct onednn_operand onednn_transposed(int64_t rows, int64_t cols);

void onednn_matmul(const struct onednn_matmul *m, const void *a, const void *b, const void *bias, void *c);

/* c (M, N) = alpha * op(a) @ op(b) + beta * c in fp32, row-major with leading dimensions
 * lda, ldb, ldc, op transposing where trans_a / trans_b is 1: BLAS's sgemm, oneDNN's.
 * It keeps no state, so the threads of a parallel region may each run one at once
 * (single-threaded inside the region); onednn_matmul runs one product at a time. */
void onednn_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* How many primitives have been created since the start: tests check that a repeated
 * problem creates none. */
uint64_t onednn_primitives_created(void);

#endif
