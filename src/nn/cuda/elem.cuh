/* Private to src/nn/cuda: an element of a gpu_buf (llama_kernels.h) as fp32. A 16-bit
 * value widens exactly and a store rounds to nearest even, with dtype.cuh's conversions
 * (dtype.c's to the bit), so a kernel that computes in fp32 and stores once rounds its
 * result exactly as the CPU's fp32 result rounded to the dtype would be. The dtype is a
 * kernel argument, the same for every thread: the branch never diverges. */
#ifndef FSDP_NN_CUDA_ELEM_CUH
#define FSDP_NN_CUDA_ELEM_CUH

#include "dtype.cuh"
#include "llama_kernels.h"

static __device__ inline float elem_get(struct gpu_buf b, size_t i) {
  return b.dtype == DTYPE_F32 ? ((const float *)b.data)[i] : widen(b.dtype, ((const uint16_t *)b.data)[i]);
}

static __device__ inline void elem_set(struct gpu_buf b, size_t i, float x) {
  if (b.dtype == DTYPE_F32)
    ((float *)b.data)[i] = x;
  else
    ((uint16_t *)b.data)[i] = narrow(b.dtype, x);
}

/* b[i] += x, the sum in fp32 and rounded once: the backwards' accumulation. */
static __device__ inline void elem_add(struct gpu_buf b, size_t i, float x) { elem_set(b, i, elem_get(b, i) + x); }

/* A backward's input gradient: added (NN_GRAD_ADD) or written (NN_GRAD_SET). */
static __device__ inline void elem_put(struct gpu_buf b, size_t i, float x, int accumulate) {
  if (accumulate)
    elem_add(b, i, x);
  else
    elem_set(b, i, x);
}

#endif
