/* A build without CUDA has no cuda kernels. */
#include "ops.h"

const struct nn_backend *nn_cuda_backend(void) { return NULL; }
