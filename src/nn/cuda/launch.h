/* Private to src/nn/cuda: what the launchers (runtime.c, layers_gpt2.c, layers_llama.c,
 * matmul.c, attention.c) share: the op's stream, the check of a launch, and the checks of
 * their tensors' dtypes. */
#ifndef FSDP_NN_CUDA_LAUNCH_H
#define FSDP_NN_CUDA_LAUNCH_H

#include <cuda_runtime.h>

#include "../ops.h"
#include "fsdp/error.h"
#include "fsdp/stream.h"

static inline cudaStream_t layer_stream(void) {
  cudaStream_t s = stream_native_handle(nn_launch_stream());
  FSDP_CHECK(s);
  return s;
}

/* A bad launch, or an earlier kernel's fault that it reports. */
static inline void layer_check(const char *op, cudaError_t rc) {
  if (rc != cudaSuccess) fsdp_fatal("nn: cuda kernel %s failed: %s", op, cudaGetErrorString(rc));
}

/* The compute dtype of an op, from its first float tensor: fp32, bf16 or fp16. */
static inline enum dtype layer_dtype(const char *op, struct tensor t) {
  if (t.dtype != DTYPE_F32 && t.dtype != DTYPE_BF16 && t.dtype != DTYPE_F16)
    fsdp_fatal("nn: cuda kernel %s computes in fp32, bf16 or fp16, not %s", op, dtype_name(t.dtype));
  FSDP_CHECK(t.data);
  return t.dtype;
}

/* A tensor of the op in its compute dtype d (present: data not NULL). */
static inline void *in_dtype(const char *op, struct tensor t, enum dtype d) {
  if (t.dtype != d) fsdp_fatal("nn: cuda kernel %s: a %s tensor among %s ones", op, dtype_name(t.dtype), dtype_name(d));
  FSDP_CHECK(t.data);
  return t.data;
}

/* An optional one: NULL when absent. */
static inline void *in_dtype_or_null(const char *op, struct tensor t, enum dtype d) {
  return t.data ? in_dtype(op, t, d) : NULL;
}

static inline const int *token_ids(struct tensor t) {
  FSDP_CHECK(t.dtype == DTYPE_I32 && t.data);
  return t.data;
}

#endif
