/* AdamW on the GPU, cpu_adamw's formula in its order of operations. Every step is an _rn
 * intrinsic (IEEE rounding, never contracted into a fused multiply-add; the CPU's C is
 * compiled without contraction too), so that the results match the CPU's to the bit. */
#include "grid.cuh"
#include "kernels.h"

static __global__ void adamw_kernel(float *param, const float *grad, float *m, float *v, size_t n,
                                    struct gpu_adamw h) {
  GRID_STRIDE(i, 0, n) {
    float g = grad[i];
    float p = __fmul_rn(param[i], h.decay);
    float mi = __fadd_rn(__fmul_rn(h.beta1, m[i]), __fmul_rn(__fsub_rn(1.0f, h.beta1), g));
    float vi = __fadd_rn(__fmul_rn(h.beta2, v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, h.beta2), g), g));
    float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), h.bias_correction2_sqrt), h.eps);
    m[i] = mi;
    v[i] = vi;
    param[i] = __fsub_rn(p, __fdiv_rn(__fmul_rn(h.step_size, mi), denom));
  }
}

cudaError_t gpu_adamw(float *param, const float *grad, float *m, float *v, size_t n, struct gpu_adamw h,
                      cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  adamw_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(param, grad, m, v, n, h);
  return cudaGetLastError();
}
