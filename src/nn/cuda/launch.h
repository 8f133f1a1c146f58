/* Private to src/nn/cuda: what the launchers (runtime.c, layers_gpt2.c, layers_llama.c,
 * matmul.c, attention.c) share: the op's stream and the check of a launch. Their
 * tensors' dtypes, shapes and alignment were checked against the op's contract before
 * (../contract.h): a launcher takes them as they come. */
#ifndef FSDP_NN_CUDA_LAUNCH_H
#define FSDP_NN_CUDA_LAUNCH_H

#include <cuda_runtime.h>

#include "../ops.h"
#include "fsdp/error.h"
#include "fsdp/stream.h"

static inline cudaStream_t layer_stream(void) {
  cudaStream_t s = stream_native_handle(nn_launch_stream());
  FSDP_CHECK(s);
  return s;
}

/* A bad launch, or an earlier kernel's fault that it reports. */
static inline void layer_check(const char *op, cudaError_t rc) {
  if (rc != cudaSuccess) fsdp_fatal("nn: cuda kernel %s failed: %s", op, cudaGetErrorString(rc));
}

#endif
