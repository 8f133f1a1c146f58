/* GPT-2's embedding, twin of ../cpu/encoder.c:
 *   forward:  out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]   (without wpe: the token's row)
 *   backward: dwte[inp[b,t],:] += dout[b,t,:],  dwpe[t,:] += sum_b dout[b,t,:]
 * In fp32 every sum is formed in the CPU's order, so the results are its own to the bit. */
#include "typed.cuh"
#include "grid.cuh"
#include "encoder.h"
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
 * and which bf16 would round at every add), the CPU's algorithm: a stable counting sort
 * groups the positions by token, then one block per token adds its rows of dout in
 * position order to the row's current value and stores it once. The sort, in time and
 * scratch linear in the N positions (encoder.h):
 *   count:   the positions are cut into chunks of ENCODER_CHUNK; a block ranks each
 *            position of its chunk among the earlier ones of the same token (a scan of the
 *            chunk in shared memory), and the last of a token writes the token's count
 *            in the chunk to counts[token * chunks + chunk]: one writer each, no atomics;
 *   scan:    an exclusive prefix sum over counts, token-major, gives every (token, chunk)
 *            its first slot: tokens in order and, within a token, chunks in order;
 *   scatter: a position goes to its (token, chunk)'s first slot plus its rank;
 *   reduce:  token v's positions are slots counts[v * chunks] to counts[(v + 1) * chunks]. */
static const unsigned SCAN_THREADS = 1024;

static __global__ void encoder_rank_kernel(int *counts, int *ranks, const int *inp, int N, int chunks) {
  __shared__ int chunk_tokens[ENCODER_CHUNK];
  int chunk = blockIdx.x, first = chunk * ENCODER_CHUNK, len = min(N - first, (int)ENCODER_CHUNK);
  for (int i = threadIdx.x; i < len; i += blockDim.x) chunk_tokens[i] = inp[first + i];
  __syncthreads();
  for (int i = threadIdx.x; i < len; i += blockDim.x) {
    int token = chunk_tokens[i], rank = 0, later = 0;
    for (int j = 0; j < len; j++)
      if (chunk_tokens[j] == token) {
        rank += j < i;
        later |= j > i;
      }
    ranks[first + i] = rank;
    if (!later) counts[(size_t)token * chunks + chunk] = rank + 1;
  }
}

/* One block: each thread sums its run of counts, the threads' sums are scanned in shared
 * memory, and each thread rewrites its run as exclusive prefix sums. */
static __global__ void encoder_scan_kernel(int *counts, size_t n) {
  __shared__ int sums[SCAN_THREADS];
  size_t per = (n + SCAN_THREADS - 1) / SCAN_THREADS, first = threadIdx.x * per;
  size_t end = first + per < n ? first + per : n;
  int run = 0;
  for (size_t i = first; i < end; i++) run += counts[i];
  sums[threadIdx.x] = run;
  __syncthreads();
  for (unsigned offset = 1; offset < SCAN_THREADS; offset *= 2) {
    int add = threadIdx.x >= offset ? sums[threadIdx.x - offset] : 0;
    __syncthreads();
    sums[threadIdx.x] += add;
    __syncthreads();
  }
  int before = sums[threadIdx.x] - run;
  for (size_t i = first; i < end; i++) {
    int count = counts[i];
    counts[i] = before;
    before += count;
  }
}

static __global__ void encoder_scatter_kernel(int *order, const int *starts, const int *ranks, const int *inp, int N,
                                              int chunks) {
  GRID_STRIDE(i, 0, (size_t)N) order[starts[(size_t)inp[i] * chunks + i / ENCODER_CHUNK] + ranks[i]] = (int)i;
}

template <enum dtype D>
static __global__ void encoder_reduce_kernel(void *dwte, const void *dout, const int *starts, const int *order,
                                             int C, int chunks) {
  size_t token = blockIdx.x;
  int first = starts[token * chunks], end = starts[(token + 1) * chunks];
  if (first == end) return;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    size_t at = token * C + c;
    float acc = load<D>(dwte, at);
    for (int j = first; j < end; j++) acc += load<D>(dout, (size_t)order[j] * C + c);
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
static cudaError_t encoder_backward_wte(void *dwte, const void *dout, const int *inp, int N, int V, int C,
                                        void *scratch, cudaStream_t s) {
  if (N == 0 || V == 0) return cudaSuccess;
  int chunks = (N + ENCODER_CHUNK - 1) / ENCODER_CHUNK;
  size_t slots = (size_t)V * chunks + 1;
  int *counts = (int *)scratch, *ranks = counts + slots, *order = ranks + N;
  cudaError_t rc = cudaMemsetAsync(counts, 0, slots * sizeof *counts, s);
  if (rc != cudaSuccess) return rc;
  encoder_rank_kernel<<<chunks, BLOCK_THREADS, 0, s>>>(counts, ranks, inp, N, chunks);
  encoder_scan_kernel<<<1, SCAN_THREADS, 0, s>>>(counts, slots);
  encoder_scatter_kernel<<<blocks_for((size_t)N), BLOCK_THREADS, 0, s>>>(order, counts, ranks, inp, N, chunks);
  encoder_reduce_kernel<D><<<V, BLOCK_THREADS, 0, s>>>(dwte, dout, counts, order, C, chunks);
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

cudaError_t gpu_encoder_backward_wte(enum dtype d, void *dwte, const void *dout, const int *inp, int N, int V,
                                     int C, void *scratch, cudaStream_t s) {
  BY_DTYPE(d, encoder_backward_wte, dwte, dout, inp, N, V, C, scratch, s);
}

cudaError_t gpu_encoder_backward_wpe(enum dtype d, void *dwpe, const void *dout, int B, int T, int C,
                                     cudaStream_t s) {
  BY_DTYPE(d, encoder_backward_wpe, dwpe, dout, B, T, C, s);
}
