/* GELU, tanh approximation, twin of ../cpu/gelu.c:
 *   forward:  out = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 *   backward: dinp += dout * (0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2)),
 *             or = where accumulate is 0 (NN_GRAD_SET: dinp is not read)
 * Elementwise. The CPU computes the same function as x sigmoid(2u), which does not cancel
 * where u is very negative: there (x below about -3) the two differ by more than a few
 * ulp, elsewhere by a few at most. */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"

static const float GELU_SCALE = 0.7978845608028654f; /* sqrt(2 / pi) */
static const float GELU_CUBE = 0.044715f;

template <enum dtype D>
static __global__ void gelu_forward_kernel(void *out, const void *inp, size_t n) {
  GRID_STRIDE(i, 0, n) {
    float x = load<D>(inp, i);
    float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
    store<D>(out, i, 0.5f * x * (1.0f + tanhf(u)));
  }
}

template <enum dtype D>
static __global__ void gelu_backward_kernel(void *dinp, const void *inp, const void *dout, size_t n, int accumulate) {
  GRID_STRIDE(i, 0, n) {
    float x = load<D>(inp, i);
    float u = GELU_SCALE * (x + GELU_CUBE * x * x * x);
    float th = tanhf(u);
    float sech2 = 1.0f - th * th;
    float grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * x * x);
    float d = grad * load<D>(dout, i);
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
