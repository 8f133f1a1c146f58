/* SwiGLU on the GPU, the twin of ../cpu/swiglu.c, elementwise:
 *
 *   out = silu(g) * u,   silu(g) = g * sig,   sig = 1 / (1 + exp(-g))
 *   dg += dout * u * sig * (1 + g * (1 - sig)),   du += dout * silu(g)   (or =: NN_GRAD_SET)
 *
 * expf is CUDA's full-precision one (2 ulp), not __expf, whose error grows with |g|;
 * glibc's differs by an ulp or so, hence a tolerance rather than bits. For g below
 * about -88 exp(-g) is inf and sig 0, silu's limit: no NaN, as on the CPU. */
#include "elem.cuh"
#include "grid.cuh"
#include "llama_kernels.h"

static __device__ inline float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

static __global__ void swiglu_forward_kernel(struct gpu_buf out, struct gpu_buf gate, struct gpu_buf up, size_t n) {
  GRID_STRIDE(i, 0, n) {
    float g = elem_get(gate, i);
    elem_set(out, i, g * sigmoid(g) * elem_get(up, i));
  }
}

static __global__ void swiglu_backward_kernel(struct gpu_buf dgate, struct gpu_buf dup, struct gpu_buf dout,
                                              struct gpu_buf gate, struct gpu_buf up, size_t n, int accumulate) {
  GRID_STRIDE(i, 0, n) {
    float g = elem_get(gate, i), d = elem_get(dout, i), sig = sigmoid(g);
    elem_put(dgate, i, d * elem_get(up, i) * sig * (1.0f + g * (1.0f - sig)), accumulate);
    elem_put(dup, i, d * g * sig, accumulate);
  }
}

cudaError_t gpu_swiglu_forward(struct gpu_buf out, struct gpu_buf gate, struct gpu_buf up, size_t n,
                               cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  swiglu_forward_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(out, gate, up, n);
  return cudaGetLastError();
}

cudaError_t gpu_swiglu_backward(struct gpu_buf dgate, struct gpu_buf dup, int accumulate, struct gpu_buf dout,
                                struct gpu_buf gate, struct gpu_buf up, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  swiglu_backward_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(dgate, dup, dout, gate, up, n, accumulate);
  return cudaGetLastError();
}
