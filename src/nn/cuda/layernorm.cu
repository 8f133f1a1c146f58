/* LayerNorm over the last dimension, twin of ../cpu/layernorm.c:
 *   forward:  mean = sum(x) / C,  var = sum((x - mean)^2) / C (biased, as PyTorch),
 *             rstd = 1 / sqrt(var + 1e-5),  out = (x - mean) * rstd * weight + bias
 *   backward: with norm = (x - mean) * rstd and dnorm = dout * weight,
 *             dinp += rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)),
 *             dweight += sum_rows dout * norm,  dbias += sum_rows dout
 * A warp takes a row (GPT-2's C is 768 to 1600: a few dozen elements a lane), so the
 * row's sums need only shuffles; the variance is from centred values, in a second pass
 * over the row (which the L1 still holds), as the CPU computes it, so that it does not
 * cancel. dweight and dbias are column sums over the rows, in two passes (colsum.cuh).
 * mean and rstd stay fp32 in every compute dtype (the op's contract). The sums
 * run in another order than the CPU's: results differ by rounding. */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"
#include "colsum.cuh"
#include "reduce.cuh"

static const float LN_EPS = 1e-5f;
static const unsigned ROWS_PER_BLOCK = BLOCK_THREADS / 32;

/* The warp's row, or -1 past the last: the whole warp returns together. */
static __device__ inline int warp_row(int N) {
  int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP_SIZE;
  return row < N ? row : -1;
}

template <enum dtype D>
static __global__ void layernorm_forward_kernel(void *out, void *mean, void *rstd, const void *inp,
                                                const void *weight, const void *bias, int N, int C) {
  int row = warp_row(N), lane = threadIdx.x % WARP_SIZE;
  if (row < 0) return;
  size_t base = (size_t)row * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += WARP_SIZE) sum += load<D>(inp, base + c);
  float m = warp_sum_all(sum) / C;
  float var = 0.0f;
  for (int c = lane; c < C; c += WARP_SIZE) {
    float centred = load<D>(inp, base + c) - m;
    var += centred * centred;
  }
  float s = 1.0f / sqrtf(warp_sum_all(var) / C + LN_EPS);
  for (int c = lane; c < C; c += WARP_SIZE)
    store<D>(out, base + c, (load<D>(inp, base + c) - m) * s * load<D>(weight, c) + load<D>(bias, c));
  if (lane == 0) {
    ((float *)mean)[row] = m;
    ((float *)rstd)[row] = s;
  }
}

template <enum dtype D>
static __global__ void layernorm_backward_input_kernel(void *dinp, const void *dout, const void *inp,
                                                       const void *weight, const void *mean, const void *rstd,
                                                       int N, int C) {
  int row = warp_row(N), lane = threadIdx.x % WARP_SIZE;
  if (row < 0) return;
  size_t base = (size_t)row * C;
  float m = ((const float *)mean)[row], s = ((const float *)rstd)[row];
  float dnorm_sum = 0.0f, dnorm_norm_sum = 0.0f;
  for (int c = lane; c < C; c += WARP_SIZE) {
    float dnorm = load<D>(dout, base + c) * load<D>(weight, c);
    dnorm_sum += dnorm;
    dnorm_norm_sum += dnorm * (load<D>(inp, base + c) - m) * s;
  }
  float dnorm_mean = warp_sum_all(dnorm_sum) / C, dnorm_norm_mean = warp_sum_all(dnorm_norm_sum) / C;
  for (int c = lane; c < C; c += WARP_SIZE) {
    float norm = (load<D>(inp, base + c) - m) * s;
    float dnorm = load<D>(dout, base + c) * load<D>(weight, c);
    store<D>(dinp, base + c, load<D>(dinp, base + c) + s * (dnorm - dnorm_mean - norm * dnorm_norm_mean));
  }
}

/* dweight's and dbias's terms of a row and column: dout * norm and dout. */
template <enum dtype D>
struct layernorm_param_terms {
  const void *dout, *inp;
  const float *mean, *rstd;
  int C;
  __device__ void operator()(size_t i, int c, float t[2]) const {
    size_t at = i * C + c;
    float d = load<D>(dout, at);
    t[0] = d * (load<D>(inp, at) - mean[i]) * rstd[i];
    t[1] = d;
  }
};

template <enum dtype D>
struct layernorm_param_add {
  void *dweight, *dbias;
  __device__ void operator()(int k, int c, float total) const {
    void *g = k == 0 ? dweight : dbias;
    if (g) store<D>(g, c, load<D>(g, c) + total);
  }
};

static unsigned row_blocks(int N) { return (N + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK; }

template <enum dtype D>
static cudaError_t layernorm_forward(void *out, void *mean, void *rstd, const void *inp, const void *weight,
                                     const void *bias, int N, int C, cudaStream_t s) {
  layernorm_forward_kernel<D><<<row_blocks(N), BLOCK_THREADS, 0, s>>>(out, mean, rstd, inp, weight, bias, N, C);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t layernorm_backward_input(void *dinp, const void *dout, const void *inp, const void *weight,
                                            const void *mean, const void *rstd, int N, int C, cudaStream_t s) {
  layernorm_backward_input_kernel<D><<<row_blocks(N), BLOCK_THREADS, 0, s>>>(dinp, dout, inp, weight, mean, rstd,
                                                                             N, C);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t layernorm_backward_params(void *dweight, void *dbias, const void *dout, const void *inp,
                                             const void *mean, const void *rstd, int N, int C, void *scratch,
                                             cudaStream_t s) {
  layernorm_param_terms<D> terms = {dout, inp, (const float *)mean, (const float *)rstd, C};
  return column_sums<2>(terms, layernorm_param_add<D>{dweight, dbias}, N, C, scratch, s);
}

cudaError_t gpu_layernorm_forward(enum dtype d, void *out, void *mean, void *rstd, const void *inp,
                                  const void *weight, const void *bias, int N, int C, cudaStream_t s) {
  BY_DTYPE(d, layernorm_forward, out, mean, rstd, inp, weight, bias, N, C, s);
}

cudaError_t gpu_layernorm_backward_input(enum dtype d, void *dinp, const void *dout, const void *inp,
                                         const void *weight, const void *mean, const void *rstd, int N, int C,
                                         cudaStream_t s) {
  BY_DTYPE(d, layernorm_backward_input, dinp, dout, inp, weight, mean, rstd, N, C, s);
}

cudaError_t gpu_layernorm_backward_params(enum dtype d, void *dweight, void *dbias, const void *dout,
                                          const void *inp, const void *mean, const void *rstd, int N, int C,
                                          void *scratch, cudaStream_t s) {
  BY_DTYPE(d, layernorm_backward_params, dweight, dbias, dout, inp, mean, rstd, N, C, scratch, s);
}
