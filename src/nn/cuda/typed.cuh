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

/* Runs of W elements from element i on, widened into x (or narrowed from it): one 16-byte
 * access where W elements fill 16 bytes (the caller has checked that p + i is on 16
 * bytes), else one access an element. RUN16<D> is W for 16 bytes. */
template <enum dtype D>
static constexpr int RUN16 = D == DTYPE_F32 ? 4 : 8;

template <enum dtype D, int W>
static __device__ inline void load_run(const void *p, size_t i, float x[W]) {
  if constexpr (W == RUN16<D>) {
    uint4 raw = *(const uint4 *)((const char *)p + i * (D == DTYPE_F32 ? 4 : 2));
    uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
    for (int k = 0; k < 4; k++) {
      if constexpr (D == DTYPE_F32) {
        x[k] = __uint_as_float(words[k]);
      } else {
        x[2 * k] = widen(D, (uint16_t)(words[k] & 0xffffu));
        x[2 * k + 1] = widen(D, (uint16_t)(words[k] >> 16));
      }
    }
  } else {
    for (int k = 0; k < W; k++) x[k] = load<D>(p, i + k);
  }
}

template <enum dtype D, int W>
static __device__ inline void store_run(void *p, size_t i, const float x[W]) {
  if constexpr (W == RUN16<D>) {
    uint32_t words[4];
    for (int k = 0; k < 4; k++) {
      if constexpr (D == DTYPE_F32)
        words[k] = __float_as_uint(x[k]);
      else
        words[k] = (uint32_t)narrow(D, x[2 * k]) | (uint32_t)narrow(D, x[2 * k + 1]) << 16;
    }
    *(uint4 *)((char *)p + i * (D == DTYPE_F32 ? 4 : 2)) = make_uint4(words[0], words[1], words[2], words[3]);
  } else {
    for (int k = 0; k < W; k++) store<D>(p, i + k, x[k]);
  }
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
