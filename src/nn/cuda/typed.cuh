/* Private to src/nn/cuda: how the layer kernels read and write their tensors. A kernel is
 * a template on the tensors' dtype D (fp32, bf16 or fp16: the compute dtype, which every
 * float tensor of an op shares); it loads each element as fp32, computes in fp32, and
 * stores in D, rounding to nearest even with dtype.cuh's conversions (those of the CPU's
 * casts, to the bit). Accumulating in fp32 keeps bf16's 8 significant bits from adding up
 * errors over a row or a sum. */
#ifndef FSDP_NN_CUDA_TYPED_CUH
#define FSDP_NN_CUDA_TYPED_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.cuh"

template <enum dtype D>
static __device__ inline float load(const void *p, size_t i) {
  if constexpr (D == DTYPE_F32)
    return ((const float *)p)[i];
  else
    return widen(D, ((const uint16_t *)p)[i]);
}

template <enum dtype D>
static __device__ inline void store(void *p, size_t i, float x) {
  if constexpr (D == DTYPE_F32)
    ((float *)p)[i] = x;
  else
    ((uint16_t *)p)[i] = narrow(D, x);
}

/* Calls f<D>(args...) for the runtime dtype d; any other dtype is an invalid value (the
 * launchers check the dtypes first, so that never reaches a kernel). */
#define BY_DTYPE(d, f, ...)                                         \
  do {                                                              \
    switch (d) {                                                    \
      case DTYPE_F32: return f<DTYPE_F32>(__VA_ARGS__);             \
      case DTYPE_BF16: return f<DTYPE_BF16>(__VA_ARGS__);           \
      case DTYPE_F16: return f<DTYPE_F16>(__VA_ARGS__);             \
      default: return cudaErrorInvalidValue;                        \
    }                                                               \
  } while (0)

#endif
