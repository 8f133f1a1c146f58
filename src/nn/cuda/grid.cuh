/* Private to src/nn/cuda: the launch shape of the elementwise kernels. A grid-stride loop
 * gives every element a thread up to a grid that fills an H100 (132 SMs) many times
 * over; past that size each thread takes several elements. */
#ifndef FSDP_NN_CUDA_GRID_CUH
#define FSDP_NN_CUDA_GRID_CUH

#include <stddef.h>

static const unsigned BLOCK_THREADS = 256, MAX_BLOCKS = 132 * 32;

static inline unsigned blocks_for(size_t n) {
  size_t blocks = (n + BLOCK_THREADS - 1) / BLOCK_THREADS;
  return blocks < MAX_BLOCKS ? (unsigned)blocks : MAX_BLOCKS;
}

/* i runs over this thread's elements of [begin, end). */
#define GRID_STRIDE(i, begin, end)                                                        \
  for (size_t i = (begin) + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (end); \
       i += (size_t)gridDim.x * blockDim.x)

#endif
