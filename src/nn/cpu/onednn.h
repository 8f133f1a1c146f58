/* Private to src/nn/cpu: the CPU's matrix products, on oneDNN.
 *
 * onednn_matmul: c (M, N) = a (M, K) @ b (K, N) (+ bias) (+ c) on oneDNN's matmul
 * primitive. An operand is any strided matrix (a transposed one is only a layout).
 * a and b share one dtype (fp32, bf16 or fp16), and so do bias and c: a and b's, or fp32;
 * the products accumulate in fp32 and c is rounded once. A primitive is created the first
 * time a problem is seen and kept for the process: a steady step creates none. Products
 * run one at a time on the calling thread's OpenMP team (OMP_NUM_THREADS), the pool the
 * other CPU kernels use. onednn_matmul_alone runs one single-threaded on the calling
 * thread, with primitives of that thread's own: the threads of a parallel region run
 * theirs side by side (attention's heads). */
#ifndef FSDP_NN_CPU_ONEDNN_H
#define FSDP_NN_CPU_ONEDNN_H

#include <stdint.h>

#include "fsdp/dtype.h"

/* A matrix's sizes and the distances of its rows and columns, in elements. */
struct onednn_operand {
  int64_t dims[2], strides[2];
};

/* The problem, which is also the key of its primitive: all 8-byte fields, no padding,
 * so that two problems are the same exactly when their bytes are. */
struct onednn_matmul {
  int64_t dtype;  /* enum dtype, of a and b */
  int64_t c_fp32; /* 1: c and the bias are fp32, 0: they are in dtype */
  struct onednn_operand a, b, c;
  int64_t bias;       /* 1: bias (N values, c's dtype) is added to every row of c */
  int64_t accumulate; /* 1: c += the product, 0: c = the product */
};

/* A row-major matrix (rows, cols), or its transpose seen as a (cols, rows) matrix; the
 * _rows forms for one whose rows are ld elements apart (a head's slice of an activation). */
struct onednn_operand onednn_matrix(int64_t rows, int64_t cols);
struct onednn_operand onednn_transposed(int64_t rows, int64_t cols);
struct onednn_operand onednn_matrix_rows(int64_t rows, int64_t cols, int64_t ld);
struct onednn_operand onednn_transposed_rows(int64_t rows, int64_t cols, int64_t ld);

void onednn_matmul(const struct onednn_matmul *m, const void *a, const void *b, const void *bias, void *c);
void onednn_matmul_alone(const struct onednn_matmul *m, const void *a, const void *b, const void *bias, void *c);

/* c (M, N) = alpha * op(a) @ op(b) + beta * c in fp32, row-major with leading dimensions
 * lda, ldb, ldc, op transposing where trans_a / trans_b is 1: BLAS's sgemm, oneDNN's.
 * It keeps no state, so the threads of a parallel region may each run one at once
 * (single-threaded inside the region); onednn_matmul runs one product at a time. */
void onednn_sgemm(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *a,
                  int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* The instructions oneDNN's kernels use here, its DNNL_MAX_CPU_ISA cap applied: "avx2",
 * "avx512_core_bf16", ...; "aarch64" there (oneDNN 2.6 names no aarch64 levels). */
const char *onednn_isa(void);

/* Whether oneDNN multiplies d itself here (fp32; bf16 with AVX-512 BF16 or AMX; fp16 with
 * AVX512-FP16) rather than on widened fp32 copies (onednn.c), and whether its bf16
 * products run on AMX's tiles. */
int onednn_native(enum dtype d);
int onednn_amx(void);

/* How many primitives have been created since the start: tests check that a repeated
 * problem creates none. */
uint64_t onednn_primitives_created(void);

#endif
