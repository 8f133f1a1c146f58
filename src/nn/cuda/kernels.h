/* Private to src/nn/cuda: the GPU side of the runtime's ops (the .cu files, nvcc), called
 * by the C launchers (runtime.c) with plain pointers into device memory. Each enqueues its
 * kernels on stream s and returns the launch's error (cudaGetLastError). */
#ifndef FSDP_NN_CUDA_KERNELS_H
#define FSDP_NN_CUDA_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "fsdp/dtype.h"

/* d is bf16 or fp16; conversions round to nearest even as dtype.c's, to the bit. */
cudaError_t gpu_pack(enum dtype d, const float *src, uint16_t *dst, size_t n, cudaStream_t s);
cudaError_t gpu_unpack(enum dtype d, const uint16_t *src, float *dst, size_t n, cudaStream_t s);
/* The in-place forms of dtype.h, on a buffer of n floats. */
cudaError_t gpu_pack_in_place(enum dtype d, float *buf, size_t n, cudaStream_t s);
cudaError_t gpu_unpack_upper_in_place(enum dtype d, float *buf, size_t n, cudaStream_t s);
cudaError_t gpu_round(enum dtype d, float *x, size_t n, cudaStream_t s);

cudaError_t gpu_add(float *y, const float *x, size_t n, cudaStream_t s);
cudaError_t gpu_fill(float *x, float value, size_t n, cudaStream_t s);
/* sum[0] += the sum of x, or of its squares, through gpu_sum_scratch(n) bytes of scratch
 * (scratch.h). */
cudaError_t gpu_sum(double *sum, const float *x, size_t n, int squares, double *scratch, cudaStream_t s);
cudaError_t gpu_init_normal(float *x, size_t n, uint64_t seed, uint64_t stream, uint64_t first, float std,
                            cudaStream_t s);

/* AdamW's constants, as cpu_adamw computes them on the host. */
struct gpu_adamw {
  float decay, step_size, beta1, beta2, eps, bias_correction2_sqrt;
};
/* grad_scale: one float in device memory that multiplies each gradient, or NULL;
 * rounded: NULL, or where the new param goes rounded to rd (bf16 or fp16). */
cudaError_t gpu_adamw(float *param, void *rounded, enum dtype rd, const float *grad, const float *grad_scale,
                      float *m, float *v, size_t n, struct gpu_adamw h, cudaStream_t s);
/* scale[0] from squares[0]: nn_grad_clip_scale, one thread. */
cudaError_t gpu_grad_clip_scale(float *scale, const double *squares, float unscale, float max_norm, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
