/* Private to src/nn/cuda: the GPU side of Llama 3's layer ops and of init_trunc_normal
 * (rmsnorm.cu, rope.cu, swiglu.cu, trunc_normal.cu), called by the C
 * launchers (layers_llama.c) with device pointers. Each enqueues its kernels on stream s
 * and returns the launch's error (cudaGetLastError).
 *
 * The layer kernels compute in fp32 whatever their tensors are stored in: each tensor
 * comes as a gpu_buf, its pointer and its own dtype (fp32, bf16 or fp16), read widened
 * exactly and written rounded to nearest even (elem.cuh). So a 16-bit model's tensors
 * are rounded once, when stored, and every sum runs in fp32. */
#ifndef FSDP_NN_CUDA_LLAMA_KERNELS_H
#define FSDP_NN_CUDA_LLAMA_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "fsdp/nn.h"

/* data NULL: an absent operand (a gradient nobody needs). */
struct gpu_buf {
  void *data;
  enum dtype dtype;
};

/* inp, out (N, C); rstd, dinp and dweight as nn.h says; dweight through
 * colsum_scratch_bytes(N, C) bytes of scratch (colsum.h). */
cudaError_t gpu_rmsnorm_forward(struct gpu_buf out, struct gpu_buf rstd, struct gpu_buf inp, struct gpu_buf weight,
                                float eps, int N, int C, cudaStream_t s);
cudaError_t gpu_rmsnorm_backward(struct gpu_buf dinp, struct gpu_buf dweight, struct gpu_buf dout,
                                 struct gpu_buf inp, struct gpu_buf weight, struct gpu_buf rstd, int N, int C,
                                 void *scratch, cudaStream_t s);

/* table (maxT, hd). */
cudaError_t gpu_rope_table(struct gpu_buf table, int maxT, int hd, struct nn_rope rope, cudaStream_t s);
/* x (B, T, H, hd); out may be inp. backward: dinp += the rotation back of dout. */
cudaError_t gpu_rope_forward(struct gpu_buf out, struct gpu_buf inp, struct gpu_buf table, int B, int T, int H,
                             int hd, cudaStream_t s);
cudaError_t gpu_rope_backward(struct gpu_buf dinp, struct gpu_buf dout, struct gpu_buf table, int B, int T, int H,
                              int hd, cudaStream_t s);

cudaError_t gpu_swiglu_forward(struct gpu_buf out, struct gpu_buf gate, struct gpu_buf up, size_t n,
                               cudaStream_t s);
/* dgate and dup are added to (accumulate 1) or written (0). */
cudaError_t gpu_swiglu_backward(struct gpu_buf dgate, struct gpu_buf dup, int accumulate, struct gpu_buf dout,
                                struct gpu_buf gate, struct gpu_buf up, size_t n, cudaStream_t s);

/* x[i] = rng_trunc_normal(seed, stream, first + i, std, bound) (fp32). */
cudaError_t gpu_init_trunc_normal(float *x, size_t n, uint64_t seed, uint64_t stream, uint64_t first, float std,
                                  float bound, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
