/* Private to src/nn/cuda: the GPU side of attention (flash_attention.cu,
 * cached_attention.cu), called by the C launchers (attention.c) with device pointers.
 * Each enqueues its kernels on stream s and returns the launch's error. */
#ifndef FSDP_NN_CUDA_ATTENTION_KERNELS_H
#define FSDP_NN_CUDA_ATTENTION_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "fsdp/cuda_arch.h"
#include "llama_kernels.h"

/* The largest head dimension the kernels take: a thread keeps FLASH_HD_MAX / 4 elements
 * of a row's accumulator in registers. */
enum { FLASH_HD_MAX = CUDA_ATTENTION_HD_MAX };

/* As ../cpu/attention.h's head_layout: q, k, v (B, T, heads, hd) views whose positions
 * are qs and kvs elements apart; query head h reads kv head h / (NH / NKV); out and dout
 * (B, T, NH * hd); lse (B, NH, T) fp32. */
struct gpu_attention_layout {
  int B, T, NH, NKV, hd, qs, kvs;
};

/* smem_limit: the shared memory a block of the device may have
 * (cudaDevAttrMaxSharedMemoryPerBlockOptin), by which the kernels' tiling is chosen
 * (fsdp/cuda_arch.h's cuda_attention_tiling). */
cudaError_t gpu_flash_attention_forward(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k,
                                        struct gpu_buf v, struct gpu_attention_layout l, size_t smem_limit,
                                        cudaStream_t s);
/* dq, dk, dv are added to (accumulate 1) or written (0); an absent one has no data. */
cudaError_t gpu_flash_attention_backward(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv, int accumulate,
                                         struct gpu_buf dout, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                                         struct gpu_buf out, const float *lse, struct gpu_attention_layout l,
                                         size_t smem_limit, cudaStream_t s);

/* out (n, NH * hd) from q (n, NH, hd) over k, v (L, NKV, hd): nn_cached_attention_forward. */
cudaError_t gpu_cached_attention_forward(struct gpu_buf out, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                                         int n, int L, int NH, int NKV, int hd, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
