/* AdamW on the GPU, and the gradients' clipping scale it takes: cpu_adamw's and
 * cpu_grad_clip_scale's formulas in their order of operations. Every step is an _rn
 * intrinsic (IEEE rounding, never contracted into a fused multiply-add; the CPU's C is
 * compiled without contraction too), so that the results match the CPU's to the bit. */
#include "dtype.cuh"
#include "grid.cuh"
#include "kernels.h"

static __global__ void adamw_kernel(float *param, uint16_t *rounded, enum dtype rd, const float *grad,
                                    const float *grad_scale, float *m, float *v, size_t n, struct gpu_adamw h) {
  float scale = grad_scale ? *grad_scale : 1.0f;
  GRID_STRIDE(i, 0, n) {
    float g = __fmul_rn(grad[i], scale);
    float p = __fmul_rn(param[i], h.decay);
    float mi = __fadd_rn(__fmul_rn(h.beta1, m[i]), __fmul_rn(__fsub_rn(1.0f, h.beta1), g));
    float vi = __fadd_rn(__fmul_rn(h.beta2, v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, h.beta2), g), g));
    float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), h.bias_correction2_sqrt), h.eps);
    m[i] = mi;
    v[i] = vi;
    p = __fsub_rn(p, __fdiv_rn(__fmul_rn(h.step_size, mi), denom));
    param[i] = p;
    if (rounded) rounded[i] = narrow(rd, p);
  }
}

cudaError_t gpu_adamw(float *param, void *rounded, enum dtype rd, const float *grad, const float *grad_scale,
                      float *m, float *v, size_t n, struct gpu_adamw h, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  adamw_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(param, (uint16_t *)rounded, rd, grad, grad_scale, m, v, n, h);
  return cudaGetLastError();
}

static __global__ void grad_clip_scale_kernel(float *scale, const double *squares, float unscale, float max_norm) {
  double norm = __dmul_rn(__dsqrt_rn(*squares), unscale);
  double clip = max_norm > 0.0f && norm > max_norm ? __ddiv_rn(max_norm, __dadd_rn(norm, 1e-6)) : 1.0;
  *scale = __double2float_rn(__dmul_rn(unscale, clip));
}

cudaError_t gpu_grad_clip_scale(float *scale, const double *squares, float unscale, float max_norm, cudaStream_t s) {
  grad_clip_scale_kernel<<<1, 1, 0, s>>>(scale, squares, unscale, max_norm);
  return cudaGetLastError();
}
