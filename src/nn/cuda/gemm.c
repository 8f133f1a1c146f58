/* One GEMM through cuBLASLt. cuBLAS is column-major and the tensors are row-major: a
 * row-major matrix X (r, c) with rows ld apart is, to cuBLAS, the column-major X^T (c, r)
 * with columns ld apart. So C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: cuBLAS's
 * first operand is B, its second A, with the same transpose flags, and m and n swap. The
 * bias, a vector over C's columns, is then one over the rows of cuBLAS's D: exactly what
 * the BIAS epilogue broadcasts.
 *
 * The workspace comes with the op (gemm.h). Each call asks the heuristic for the best algorithm with the
 * operands' actual alignment (the preference's default assumes 256-byte aligned
 * matrices, which interleaved heads and parameters packed into a flat buffer are not). */
#include <cublasLt.h>
#include <pthread.h>
#include <stdint.h>

#include "fsdp/error.h"
#include "gemm.h"

static cublasLtHandle_t handle;
static cublasStatus_t handle_status;
static pthread_once_t handle_once = PTHREAD_ONCE_INIT;

/* One handle for the process, on the device current at the first GEMM (a rank drives
 * one GPU); it lives as long as the process. */
static void create_handle(void) { handle_status = cublasLtCreate(&handle); }

static void lt_check(const char *op, const char *call, cublasStatus_t status) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fsdp_fatal("nn: cuda kernel %s: %s failed: %s", op, call, cublasLtGetStatusString(status));
}

#define LT(op, call) lt_check(op, #call, call)

static cudaDataType_t cuda_type(enum dtype d) {
  switch (d) {
    case DTYPE_F32: return CUDA_R_32F;
    case DTYPE_BF16: return CUDA_R_16BF;
    case DTYPE_F16: return CUDA_R_16F;
    default: fsdp_fatal("nn: cuBLASLt GEMMs in fp32, bf16 or fp16, not %s", dtype_name(d));
  }
}

/* The largest power of two up to 256 that divides the address of every row of every
 * matrix of the operand. */
static uint32_t alignment(const void *data, int64_t ld, int64_t stride, int batch, size_t elem) {
  uint64_t bits = (uintptr_t)data | (uint64_t)ld * elem | (batch > 1 ? (uint64_t)stride * elem : 0);
  uint32_t a = 1;
  while (a < 256 && !(bits & a)) a <<= 1;
  return a;
}

/* cuBLAS's column-major view of a row-major matrix stored (rows, cols). */
static cublasLtMatrixLayout_t layout(const char *op, cudaDataType_t type, int rows, int cols, int64_t ld, int batch,
                                     int64_t stride) {
  cublasLtMatrixLayout_t l;
  LT(op, cublasLtMatrixLayoutCreate(&l, type, (uint64_t)cols, (uint64_t)rows, ld));
  if (batch > 1) {
    int32_t count = batch;
    LT(op, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    LT(op, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}

static void set_alignment(const char *op, cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                          uint32_t bytes) {
  LT(op, cublasLtMatmulPreferenceSetAttribute(pref, attr, &bytes, sizeof bytes));
}

int gemm(const char *op, enum dtype d, const struct gemm *g, cudaStream_t s) {
  FSDP_CHECK(g->m > 0 && g->n > 0 && g->k > 0 && g->batch > 0);
  pthread_once(&handle_once, create_handle);
  lt_check(op, "cublasLtCreate", handle_status);
  cudaDataType_t type = cuda_type(d);
  size_t elem = dtype_size(d);

  cublasLtMatmulDesc_t desc;
  LT(op, cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t trans_first = g->b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t trans_second = g->a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  LT(op, cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_first, sizeof trans_first));
  LT(op, cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_second, sizeof trans_second));
  if (g->bias) {
    /* The bias's dtype defaults to D's, which is d. */
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    LT(op, cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    LT(op, cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias, sizeof g->bias));
  }

  /* The stored shapes: B is (k, n), or (n, k) transposed; A (m, k), or (k, m). */
  cublasLtMatrixLayout_t first = g->b.transposed ? layout(op, type, g->n, g->k, g->b.ld, g->batch, g->b.stride)
                                                 : layout(op, type, g->k, g->n, g->b.ld, g->batch, g->b.stride);
  cublasLtMatrixLayout_t second = g->a.transposed ? layout(op, type, g->k, g->m, g->a.ld, g->batch, g->a.stride)
                                                  : layout(op, type, g->m, g->k, g->a.ld, g->batch, g->a.stride);
  cublasLtMatrixLayout_t out = layout(op, type, g->m, g->n, g->ldc, g->batch, g->stride_c);

  cublasLtMatmulPreference_t pref;
  LT(op, cublasLtMatmulPreferenceCreate(&pref));
  FSDP_CHECK(g->workspace);
  uint64_t workspace = GEMM_WORKSPACE_BYTES;
  LT(op, cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                              sizeof workspace));
  uint32_t out_alignment = alignment(g->c, g->ldc, g->stride_c, g->batch, elem);
  set_alignment(op, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                alignment(g->b.data, g->b.ld, g->b.stride, g->batch, elem));
  set_alignment(op, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                alignment(g->a.data, g->a.ld, g->a.stride, g->batch, elem));
  set_alignment(op, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, out_alignment);
  set_alignment(op, pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, out_alignment);

  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  /* No algorithm: a count of 0, or (some versions) CUBLAS_STATUS_NOT_SUPPORTED. */
  cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle, desc, first, second, out, out, pref, 1, &heuristic, &found);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED)
    found = 0;
  else
    lt_check(op, "cublasLtMatmulAlgoGetHeuristic", status);
  if (found == 0 && !g->bias)
    fsdp_fatal("nn: cuda kernel %s: cuBLASLt has no algorithm for a %s GEMM of %d x %d x %d", op, dtype_name(d),
               g->m, g->n, g->k);
  if (found > 0)
    LT(op, cublasLtMatmul(handle, desc, &g->alpha, g->b.data, first, g->a.data, second, &g->beta, g->c, out, g->c,
                          out, &heuristic.algo, g->workspace, GEMM_WORKSPACE_BYTES, s));
  /* The descriptors are the host's: cuBLASLt has taken what it needs once the call is enqueued. */
  LT(op, cublasLtMatmulPreferenceDestroy(pref));
  LT(op, cublasLtMatrixLayoutDestroy(out));
  LT(op, cublasLtMatrixLayoutDestroy(second));
  LT(op, cublasLtMatrixLayoutDestroy(first));
  LT(op, cublasLtMatmulDescDestroy(desc));
  return found > 0;
}
