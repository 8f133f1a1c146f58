/* GELU, tanh approximation, twin of ../cpu/gelu.c:
 *   forward:  out = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 *   backward: dinp += dout * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2)),
 *             or = where accumulate is 0 (NN_GRAD_SET: dinp is not read)
 * Elementwise, computed as the CPU computes it: x sigmoid(2u) and its derivative
 * sig + x sig (1 - sig) 2 sqrt(2/pi) (1 + 3 * 0.044715 x^2); only exp differs (CUDA's
 * expf against exp_fp32.h's), by an ulp or so. */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"

static const float GELU_SCALE = 0.7978845608028654f; /* sqrt(2 / pi) */
static const float GELU_CUBE = 0.044715f;

/* The CPU twin's form (../cpu/gelu.c): 0.5 (1 + tanh u) = sigmoid(2u), -2u = x (-2 sqrt(2/pi)
 * - 2 sqrt(2/pi) 0.044715 x^2): no cancellation in the negative tail, where 1 + tanhf(u)
 * keeps only a few bits (x < -3). expf overflows to inf below about x = -9.8: sig 0, as the
 * CPU's clamped exp gives under 2^-125. */
static __device__ inline float sigmoid_2u(float x, float x2) {
  float minus_2u = x * fmaf(-2.0f * GELU_SCALE * GELU_CUBE, x2, -2.0f * GELU_SCALE);
  return 1.0f / (1.0f + expf(minus_2u));
}

template <enum dtype D>
static __global__ void gelu_forward_kernel(void *out, const void *inp, size_t n) {
  GRID_STRIDE(i, 0, n) {
    float x = load<D>(inp, i);
    store<D>(out, i, x * sigmoid_2u(x, x * x));
  }
}

template <enum dtype D>
static __global__ void gelu_backward_kernel(void *dinp, const void *inp, const void *dout, size_t n, int accumulate) {
  GRID_STRIDE(i, 0, n) {
    float x = load<D>(inp, i), x2 = x * x, sig = sigmoid_2u(x, x2);
    float du = fmaf(6.0f * GELU_SCALE * GELU_CUBE, x2, 2.0f * GELU_SCALE);
    float d = fmaf(x * (sig * (1.0f - sig)), du, sig) * load<D>(dout, i);
    store<D>(dinp, i, accumulate ? load<D>(dinp, i) + d : d);
  }
}

template <enum dtype D>
static cudaError_t gelu_forward(void *out, const void *inp, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  gelu_forward_kernel<D><<<blocks_for(n), BLOCK_THREADS, 0, s>>>(out, inp, n);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t gelu_backward(void *dinp, const void *inp, const void *dout, size_t n, int accumulate,
                                 cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  gelu_backward_kernel<D><<<blocks_for(n), BLOCK_THREADS, 0, s>>>(dinp, inp, dout, n, accumulate);
  return cudaGetLastError();
}

cudaError_t gpu_gelu_forward(enum dtype d, void *out, const void *inp, size_t n, cudaStream_t s) {
  BY_DTYPE(d, gelu_forward, out, inp, n, s);
}

cudaError_t gpu_gelu_backward(enum dtype d, void *dinp, const void *inp, const void *dout, size_t n, int accumulate,
                              cudaStream_t s) {
  BY_DTYPE(d, gelu_backward, dinp, inp, dout, n, accumulate, s);
}
