/* Private to src/nn/cuda: the device memory the kernels take beside their tensors, which
 * the kernel table reports to nn.c (table.c) so that the planner counts it. Plain C, as
 * colsum.h and encoder.h, which hold the column sums' and the embedding's: a build
 * without CUDA plans the GPU's step with these same sizes. */
#ifndef FSDP_NN_CUDA_SCRATCH_H
#define FSDP_NN_CUDA_SCRATCH_H

#include <stddef.h>

#include "grid.cuh"

/* cuBLASLt's workspace (split-K and Hopper's larger tiles need one): NVIDIA's
 * recommendation for Hopper. The op's launcher gets it from nn.c, which allocates it
 * from the device's allocator around the op, so the planner counts it. */
enum { GEMM_WORKSPACE_BYTES = 32 << 20 };

/* The sums' first pass (sum.cu): enough blocks to keep every SM of an H100 busy several
 * times over, each summing into a slot of the scratch. */
static const unsigned SUM_MAX_BLOCKS = 132 * 4;

static inline unsigned sum_blocks(size_t n) {
  unsigned blocks = blocks_for(n);
  return blocks < SUM_MAX_BLOCKS ? blocks : SUM_MAX_BLOCKS;
}

/* The scratch of a sum of n elements, or of their squares: a double a block. */
static inline size_t gpu_sum_scratch(size_t n) { return n ? sum_blocks(n) * sizeof(double) : 0; }

#endif
