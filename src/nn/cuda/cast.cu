/* Casts between fp32 and the 16-bit formats, and rounding through them, on the GPU.
 *
 * The in-place forms (nn_cast) run over overlapping bytes, which the CPU makes safe by
 * going through the buffer in order. Blocks of one launch run in any order, so here the
 * buffer goes in chunks, one launch each, in stream order, every chunk sized so that no
 * launch writes a byte that the same launch still reads:
 *   narrowing: chunk [s, s+m) reads floats at bytes [4s, 4s+4m) and writes 16-bit values
 *     to bytes [2s, 2s+2m), which end at or below 4s when m <= s: in chunks already read.
 *     So chunks double: [S, 2S), [2S, 4S), ... after a first chunk [0, S);
 *   widening from the upper half: chunk [s, s+m) reads 16-bit values at bytes
 *     [2n+2s, 2n+2s+2m) and writes floats to bytes [4s, 4s+4m), which end at or below
 *     2n+2s when m <= (n-s)/2: below this chunk's values and every later chunk's. So
 *     chunks halve: half of what remains each time, down to a last chunk of at most S.
 * The one chunk that breaks the rule (the first, or the last) is at most S elements and
 * runs in one block, which reads all of it into registers before a barrier and writes
 * after. That is about log2(n / S) launches, and needs no scratch memory. */
#include "dtype.cuh"
#include "grid.cuh"
#include "kernels.h"

/* The staged chunk: one block of STAGE_THREADS threads, STAGE_PER_THREAD elements each. */
static const unsigned STAGE_THREADS = 1024, STAGE_PER_THREAD = 4;
static const size_t STAGE = STAGE_THREADS * STAGE_PER_THREAD;

/* dst[i] = convert(src[i]) over [begin, end), UNROLL of a thread's elements loaded before
 * any is stored: one load in flight a thread left these casts at a third of the memory's
 * bandwidth on an H100 (Llama 3.2 1B's 1.24B parameters cast in 7.7 ms; ncu,
 * docs/benchmarks.md). A launch never writes a byte it also reads (the in-place forms'
 * chunks, below), so the loads may go ahead of the stores. */
static const int UNROLL = 4;

template <typename From, typename To, typename Convert>
static __device__ void convert_range(const From *src, To *dst, size_t begin, size_t end, Convert convert) {
  size_t stride = (size_t)gridDim.x * blockDim.x, i = begin + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + (UNROLL - 1) * stride < end; i += UNROLL * stride) {
    From x[UNROLL];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) x[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < UNROLL; k++) dst[i + k * stride] = convert(x[k]);
  }
  for (; i < end; i += stride) dst[i] = convert(src[i]);
}

static __global__ void pack_kernel(enum dtype d, const float *src, uint16_t *dst, size_t begin, size_t end) {
  convert_range(src, dst, begin, end, [d](float x) { return narrow(d, x); });
}

static __global__ void unpack_kernel(enum dtype d, const uint16_t *src, float *dst, size_t begin, size_t end) {
  convert_range(src, dst, begin, end, [d](uint16_t h) { return widen(d, h); });
}

/* [begin, end), at most STAGE elements: every read happens before the barrier, every write after. */
static __global__ void pack_staged_kernel(enum dtype d, const float *src, uint16_t *dst, size_t begin, size_t end) {
  uint16_t h[STAGE_PER_THREAD];
  for (unsigned k = 0; k < STAGE_PER_THREAD; k++) {
    size_t i = begin + threadIdx.x + (size_t)k * STAGE_THREADS;
    if (i < end) h[k] = narrow(d, src[i]);
  }
  __syncthreads();
  for (unsigned k = 0; k < STAGE_PER_THREAD; k++) {
    size_t i = begin + threadIdx.x + (size_t)k * STAGE_THREADS;
    if (i < end) dst[i] = h[k];
  }
}

static __global__ void unpack_staged_kernel(enum dtype d, const uint16_t *src, float *dst, size_t begin,
                                            size_t end) {
  float x[STAGE_PER_THREAD];
  for (unsigned k = 0; k < STAGE_PER_THREAD; k++) {
    size_t i = begin + threadIdx.x + (size_t)k * STAGE_THREADS;
    if (i < end) x[k] = widen(d, src[i]);
  }
  __syncthreads();
  for (unsigned k = 0; k < STAGE_PER_THREAD; k++) {
    size_t i = begin + threadIdx.x + (size_t)k * STAGE_THREADS;
    if (i < end) dst[i] = x[k];
  }
}

static __global__ void round_kernel(enum dtype d, float *x, size_t n) {
  GRID_STRIDE(i, 0, n) x[i] = widen(d, narrow(d, x[i]));
}

cudaError_t gpu_pack(enum dtype d, const float *src, uint16_t *dst, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  pack_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(d, src, dst, 0, n);
  return cudaGetLastError();
}

cudaError_t gpu_unpack(enum dtype d, const uint16_t *src, float *dst, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  unpack_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(d, src, dst, 0, n);
  return cudaGetLastError();
}

cudaError_t gpu_pack_in_place(enum dtype d, float *buf, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  uint16_t *out = (uint16_t *)buf;
  size_t done = n < STAGE ? n : STAGE;
  pack_staged_kernel<<<1, STAGE_THREADS, 0, s>>>(d, buf, out, 0, done);
  cudaError_t rc = cudaGetLastError();
  while (rc == cudaSuccess && done < n) {
    size_t m = n - done < done ? n - done : done;
    pack_kernel<<<blocks_for(m), BLOCK_THREADS, 0, s>>>(d, buf, out, done, done + m);
    rc = cudaGetLastError();
    done += m;
  }
  return rc;
}

cudaError_t gpu_unpack_upper_in_place(enum dtype d, float *buf, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const uint16_t *in = (const uint16_t *)buf + n;
  size_t done = 0;
  while (n - done > STAGE) {
    size_t m = (n - done) / 2;
    unpack_kernel<<<blocks_for(m), BLOCK_THREADS, 0, s>>>(d, in, buf, done, done + m);
    cudaError_t rc = cudaGetLastError();
    if (rc != cudaSuccess) return rc;
    done += m;
  }
  unpack_staged_kernel<<<1, STAGE_THREADS, 0, s>>>(d, in, buf, done, n);
  return cudaGetLastError();
}

cudaError_t gpu_round(enum dtype d, float *x, size_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  round_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(d, x, n);
  return cudaGetLastError();
}
