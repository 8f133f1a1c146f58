#include "cuda.h"

/* The GPU computes in the parameters' own dtype: bf16 and fp16 natively, fp32 as fp32. */
static enum dtype cuda_compute_dtype(enum dtype param_dtype) { return param_dtype; }

/* No attention backward is written for the GPU yet, so none needs scratch. */
static size_t cuda_attention_backward_scratch(const struct tensor *att) {
  (void)att;
  return 0;
}

/* The layer kernels and init_trunc_normal (Llama's) are not written yet: their entries
 * are NULL, and nn.c ends the job naming the op (nn.h). */
static const struct nn_backend NN_CUDA = {
    .name = "cuda",
    .compute_dtype = cuda_compute_dtype,
    .attention_backward_scratch = cuda_attention_backward_scratch,
    .cast = cuda_cast,
    .round = cuda_round,
    .add = cuda_add,
    .scale = cuda_scale,
    .sum = cuda_sum,
    .sum_squares = cuda_sum_squares,
    .fill = cuda_fill,
    .init_normal = cuda_init_normal,
    .adamw = cuda_adamw,
};

const struct nn_backend *nn_cuda_backend(void) { return &NN_CUDA; }
