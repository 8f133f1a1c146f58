/* GPT-2's embedding, twin of ../cpu/encoder.c:
 *   forward:  out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]   (without wpe: the token's row)
 *   backward: dwte[inp[b,t],:] += dout[b,t,:],  dwpe[t,:] += sum_b dout[b,t,:]
 * In fp32 every sum is formed in the CPU's order, so the results are its own to the bit. */
#include "typed.cuh"
#include "grid.cuh"
#include "layers.h"

template <enum dtype D>
static __global__ void encoder_forward_kernel(void *out, const int *inp, const void *wte, const void *wpe, int T,
                                              int C, size_t n) {
  GRID_STRIDE(i, 0, n) {
    size_t bt = i / C, c = i % C;
    float x = load<D>(wte, (size_t)inp[bt] * C + c);
    if (wpe) x += load<D>(wpe, (bt % T) * C + c);
    store<D>(out, i, x);
  }
}

/* A token may occur at several positions, whose rows of dout all add into its row of
 * dwte. Rather than atomics (whose order, and so whose rounding, changes from run to run,
 * and which bf16 would round at every add), the block of the token's first position sums
 * all its occurrences, in the order of the positions as the CPU does, starting from the
 * row's current value, and writes the row once; the blocks of later occurrences find an
 * earlier one and do nothing. Scanning inp costs O(N) ints per position, which stay in
 * the L1 and L2 caches: small next to the matmuls for any N the model runs. */
template <enum dtype D>
static __global__ void encoder_backward_wte_kernel(void *dwte, const void *dout, const int *inp, int N, int C) {
  int bt = blockIdx.x, token = inp[bt];
  int earlier = 0;
  for (int j = threadIdx.x; j < bt; j += blockDim.x) earlier |= inp[j] == token;
  if (__syncthreads_or(earlier)) return;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    size_t at = (size_t)token * C + c;
    float acc = load<D>(dwte, at);
    for (int j = bt; j < N; j++)
      if (inp[j] == token) acc += load<D>(dout, (size_t)j * C + c);
    store<D>(dwte, at, acc);
  }
}

/* One thread per element of dwpe (T, C), adding the batch's rows b = 0, 1, ... in order. */
template <enum dtype D>
static __global__ void encoder_backward_wpe_kernel(void *dwpe, const void *dout, int B, int T, int C) {
  size_t TC = (size_t)T * C;
  GRID_STRIDE(i, 0, TC) {
    float acc = load<D>(dwpe, i);
    for (int b = 0; b < B; b++) acc += load<D>(dout, b * TC + i);
    store<D>(dwpe, i, acc);
  }
}

template <enum dtype D>
static cudaError_t encoder_forward(void *out, const int *inp, const void *wte, const void *wpe, int N, int T, int C,
                                   cudaStream_t s) {
  size_t n = (size_t)N * C;
  encoder_forward_kernel<D><<<blocks_for(n), BLOCK_THREADS, 0, s>>>(out, inp, wte, wpe, T, C, n);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t encoder_backward_wte(void *dwte, const void *dout, const int *inp, int N, int C, cudaStream_t s) {
  encoder_backward_wte_kernel<D><<<N, BLOCK_THREADS, 0, s>>>(dwte, dout, inp, N, C);
  return cudaGetLastError();
}

template <enum dtype D>
static cudaError_t encoder_backward_wpe(void *dwpe, const void *dout, int B, int T, int C, cudaStream_t s) {
  encoder_backward_wpe_kernel<D><<<blocks_for((size_t)T * C), BLOCK_THREADS, 0, s>>>(dwpe, dout, B, T, C);
  return cudaGetLastError();
}

cudaError_t gpu_encoder_forward(enum dtype d, void *out, const int *inp, const void *wte, const void *wpe, int N,
                                int T, int C, cudaStream_t s) {
  BY_DTYPE(d, encoder_forward, out, inp, wte, wpe, N, T, C, s);
}

cudaError_t gpu_encoder_backward_wte(enum dtype d, void *dwte, const void *dout, const int *inp, int N, int C,
                                     cudaStream_t s) {
  BY_DTYPE(d, encoder_backward_wte, dwte, dout, inp, N, C, s);
}

cudaError_t gpu_encoder_backward_wpe(enum dtype d, void *dwpe, const void *dout, int B, int T, int C,
                                     cudaStream_t s) {
  BY_DTYPE(d, encoder_backward_wpe, dwpe, dout, B, T, C, s);
}
