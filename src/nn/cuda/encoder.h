/* Private to src/nn/cuda: the scratch of the embedding's backward (encoder.cu), which the
 * kernel table reports to nn.c (table.c) so that the planner counts it. Plain C: the host
 * side includes it too. */
#ifndef FSDP_NN_CUDA_ENCODER_H
#define FSDP_NN_CUDA_ENCODER_H

#include <stddef.h>

/* The positions a block of the counting sort ranks, in shared memory. */
enum { ENCODER_CHUNK = 1024 };

/* For N positions and V tokens: a count per (token, chunk) and one more (the total, once
 * scanned), a rank and a slot per position; all int. */
static inline size_t encoder_backward_scratch_bytes(size_t N, size_t V) {
  size_t chunks = (N + ENCODER_CHUNK - 1) / ENCODER_CHUNK;
  return N && V ? (V * chunks + 1 + 2 * N) * sizeof(int) : 0;
}

#endif
