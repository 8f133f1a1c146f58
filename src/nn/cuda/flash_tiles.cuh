/* Private to src/nn/cuda: what the tiled attention's CUDA-core kernels
 * (flash_attention.cu) and tensor-core kernels (flash_attention_tc.cu) share: the tiles,
 * the rounding to the compute dtype, and the tensor-core entry points. */
#ifndef FSDP_NN_CUDA_FLASH_TILES_CUH
#define FSDP_NN_CUDA_FLASH_TILES_CUH

#include <stdint.h>

#include "attention_kernels.h"
#include "dtype.cuh"

/* Rows of a query tile and of a key tile: ../cpu/attention.h's ATTENTION_TILE. */
static const int TILE = CUDA_ATTENTION_TILE;

/* x rounded to the compute dtype d and widened back (fp32: x): where the CPU rounds. */
static __device__ inline float rounded(enum dtype d, float x) { return d == DTYPE_F32 ? x : widen(d, narrow(d, x)); }

/* Where a tile's rows start, and how many of them lie before T. */
struct span {
  int r0, n;
};
static __device__ inline struct span span_of(int i, int T) {
  int r0 = i * TILE;
  return {r0, T - r0 < TILE ? T - r0 : TILE};
}

/* Where head h of batch b starts in a (B, T, heads, hd) view whose positions are stride
 * elements apart. */
static __device__ inline size_t head_at(int T, int stride, int hd, int b, int h) {
  return (size_t)b * T * stride + (size_t)h * hd;
}

/* Dynamic shared memory past the default 48 KiB must be asked for, per kernel. */
template <typename Kernel>
static cudaError_t allow_smem(Kernel kernel, size_t bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
}

/* A block per tile of T, per head, per batch element. */
static inline dim3 grid_of(const struct gpu_attention_layout &l, int heads) {
  return dim3((unsigned)((l.T + TILE - 1) / TILE), (unsigned)heads, (unsigned)l.B);
}

/* The tensor cores take bf16 and fp16 heads of 64 and 128 (the models'; multiples of
 * their 16-wide steps: cuda_attention_tensor_cores) whose rows start on 16 bytes, as they
 * read 8 elements a load: each tensor aligned (an absent one has no data) and the rows'
 * strides multiples of 8. */
template <size_t N>
static inline bool flash_tc_takes(enum dtype d, const struct gpu_attention_layout &l, const struct gpu_buf (&bufs)[N]) {
  for (const struct gpu_buf &b : bufs)
    if ((uintptr_t)b.data % 16) return false;
  return cuda_attention_tensor_cores(d, l.hd) && l.qs % 8 == 0 && l.kvs % 8 == 0;
}
cudaError_t flash_tc_forward(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                             struct gpu_attention_layout l, size_t smem_limit, cudaStream_t s);
cudaError_t flash_tc_backward(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv, int accumulate,
                              struct gpu_buf dout, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                              struct gpu_buf out, const float *lse, struct gpu_attention_layout l, size_t smem_limit,
                              cudaStream_t s);

#endif
