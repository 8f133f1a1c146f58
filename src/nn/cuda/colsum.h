/* Private to src/nn/cuda: the launch shape of the two-pass column sums (colsum.cuh) and
 * the scratch they take, which the kernel table reports to nn.c (table.c) so that the
 * planner counts it. Plain C: the host side includes it too. */
#ifndef FSDP_NN_CUDA_COLSUM_H
#define FSDP_NN_CUDA_COLSUM_H

#include <stddef.h>

/* A split of COLSUM_SPLIT_ROWS rows or more; at most COLSUM_MAX_SPLITS of them, which with
 * GPT-2's 24 blocks of columns a split already gives 132 SMs a dozen blocks each. */
enum { COLSUM_LANES = 16, COLSUM_SPLIT_ROWS = 128, COLSUM_MAX_SPLITS = 64 };

static inline size_t colsum_splits(size_t rows) {
  size_t splits = rows / COLSUM_SPLIT_ROWS, most = COLSUM_MAX_SPLITS;
  return splits < 1 ? 1 : splits > most ? most : splits;
}

/* The fp32 partial sums of cols columns, one row of them per split. */
static inline size_t colsum_scratch_bytes(size_t rows, size_t cols) {
  return rows && cols ? colsum_splits(rows) * cols * sizeof(float) : 0;
}

#endif
