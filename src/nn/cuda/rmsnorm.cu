/* RMSNorm on the GPU, the twin of ../cpu/rmsnorm.c. For a row x of C values:
 *
 *   rstd = 1 / sqrt(sum_c x_c^2 / C + eps),   out_c = x_c * rstd * w_c
 *
 * and, with norm = x * rstd and dnorm = dout * w, the backward
 *
 *   dx_c += rstd * (dnorm_c - norm_c * mean_c(dnorm * norm)),   dw_c += sum_rows dout_c * norm_c.
 *
 * A block per row for the forward and dx: the row's sum is a block reduction in fp32
 * (in another order than the CPU's loop: the last bits differ). dw sums over the rows,
 * a column reduction in two passes (colsum.cuh): every column has one writer and a fixed
 * order of sums, no atomics, and the same bits on every run, which a 16-bit dw (rounded
 * once per add) also needs. */
#include "elem.cuh"
#include "llama_kernels.h"
#include "colsum.cuh"
#include "reduce.cuh"

static const unsigned ROW_THREADS = 256;

static __global__ void __launch_bounds__(ROW_THREADS)
    rmsnorm_forward_kernel(struct gpu_buf out, struct gpu_buf rstd, struct gpu_buf inp, struct gpu_buf weight,
                           float eps, int C) {
  __shared__ float partial[ROW_THREADS / WARP_SIZE];
  size_t row = (size_t)blockIdx.x * C;
  float ss = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float x = elem_get(inp, row + c);
    ss += x * x;
  }
  ss = block_sum_all(ss, partial);
  float s = 1.0f / sqrtf(ss / (float)C + eps);
  /* Each thread reads back only its own elements, after the barriers: out may be inp. */
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    elem_set(out, row + c, elem_get(inp, row + c) * s * elem_get(weight, c));
  if (threadIdx.x == 0) elem_set(rstd, blockIdx.x, s);
}

static __global__ void __launch_bounds__(ROW_THREADS)
    rmsnorm_dinp_kernel(struct gpu_buf dinp, struct gpu_buf dout, struct gpu_buf inp, struct gpu_buf weight,
                        struct gpu_buf rstd, int C) {
  __shared__ float partial[ROW_THREADS / WARP_SIZE];
  size_t row = (size_t)blockIdx.x * C;
  float s = elem_get(rstd, blockIdx.x);
  float dot = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x)
    dot += elem_get(dout, row + c) * elem_get(weight, c) * elem_get(inp, row + c) * s;
  float mean = block_sum_all(dot, partial) / (float)C;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    float dnorm = elem_get(dout, row + c) * elem_get(weight, c);
    elem_add(dinp, row + c, s * (dnorm - elem_get(inp, row + c) * s * mean));
  }
}

struct rmsnorm_dweight_term {
  struct gpu_buf dout, inp, rstd;
  int C;
  __device__ void operator()(size_t i, int c, float t[1]) const {
    size_t at = i * C + c;
    t[0] = elem_get(dout, at) * elem_get(inp, at) * elem_get(rstd, i);
  }
};

struct rmsnorm_dweight_add {
  struct gpu_buf dweight;
  __device__ void operator()(int, int c, float total) const { elem_add(dweight, c, total); }
};

cudaError_t gpu_rmsnorm_forward(struct gpu_buf out, struct gpu_buf rstd, struct gpu_buf inp, struct gpu_buf weight,
                                float eps, int N, int C, cudaStream_t s) {
  if (N == 0 || C == 0) return cudaSuccess;
  rmsnorm_forward_kernel<<<N, ROW_THREADS, 0, s>>>(out, rstd, inp, weight, eps, C);
  return cudaGetLastError();
}

cudaError_t gpu_rmsnorm_backward(struct gpu_buf dinp, struct gpu_buf dweight, struct gpu_buf dout,
                                 struct gpu_buf inp, struct gpu_buf weight, struct gpu_buf rstd, int N, int C,
                                 void *scratch, cudaStream_t s) {
  if (N == 0 || C == 0) return cudaSuccess;
  if (dinp.data) {
    rmsnorm_dinp_kernel<<<N, ROW_THREADS, 0, s>>>(dinp, dout, inp, weight, rstd, C);
    cudaError_t rc = cudaGetLastError();
    if (rc != cudaSuccess) return rc;
  }
  if (!dweight.data) return cudaSuccess;
  return column_sums<1>(rmsnorm_dweight_term{dout, inp, rstd, C}, rmsnorm_dweight_add{dweight}, N, C, scratch, s);
}
