/* Private to src/nn/cuda: one GEMM through cuBLASLt, described in row-major terms (the
 * tensors' layout), on the op's stream; what matmul.c and attention.c compute with. */
#ifndef FSDP_NN_CUDA_GEMM_H
#define FSDP_NN_CUDA_GEMM_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "fsdp/dtype.h"
#include "scratch.h"

/* An input matrix: row-major with rows ld elements apart; matrix i of a batch starts
 * stride elements after matrix i - 1 (matrices may interleave, as the heads of a qkv row). */
struct gemm_operand {
  const void *data;
  int64_t ld, stride;
  int transposed; /* the operand is the transpose of the matrix stored */
};

/* For each of batch matrices: C (m, n) = alpha * op(A) (m, k) @ op(B) (k, n) + beta * C,
 * then + bias (n, broadcast over the rows; NULL: none). A, B and C in dtype d (fp32,
 * bf16 or fp16), every product and sum in fp32: CUBLAS_COMPUTE_32F, so fp32 stays fp32
 * (no TF32). C is row-major, rows ldc apart, matrices stride_c apart; the batch's C
 * matrices must not overlap. */
struct gemm {
  int m, n, k, batch;
  float alpha, beta;
  struct gemm_operand a, b;
  void *c;
  int64_t ldc, stride_c;
  const void *bias;
  void *workspace; /* GEMM_WORKSPACE_BYTES (scratch.h) of device memory, stream-ordered to s */
};


/* Enqueues the GEMM on s and returns 1; or, with a bias, returns 0 having enqueued nothing
 * where cuBLASLt has no algorithm that fuses it (a bias too little aligned, say); any
 * other failure ends the job, naming op. */
int gemm(const char *op, enum dtype d, const struct gemm *g, cudaStream_t s);

#endif
