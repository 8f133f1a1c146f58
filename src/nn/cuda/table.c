#include "cuda.h"

/* The GPU computes in the parameters' own dtype: bf16 and fp16 natively, fp32 as fp32. */
static enum dtype cuda_compute_dtype(enum dtype param_dtype) { return param_dtype; }

/* One size serves attention_backward and gqa_attention_backward (ops.h): the larger of
 * the two ops' needs, once gqa_attention_backward is written for the GPU. */
static size_t cuda_attention_backward_scratch(const struct tensor *att) {
  return cuda_gpt2_attention_backward_scratch(att);
}

/* GPT-2's layers are written; Llama's (rmsnorm, rope, swiglu, gqa attention) and
 * init_trunc_normal are not yet: their entries are NULL, and nn.c ends the job naming the
 * op (nn.h). */
static const struct nn_backend NN_CUDA = {
    .name = "cuda",
    .compute_dtype = cuda_compute_dtype,
    .attention_backward_scratch = cuda_attention_backward_scratch,
    .encoder_forward = cuda_encoder_forward,
    .encoder_backward = cuda_encoder_backward,
    .layernorm_forward = cuda_layernorm_forward,
    .layernorm_backward = cuda_layernorm_backward,
    .matmul_forward = cuda_matmul_forward,
    .matmul_backward = cuda_matmul_backward,
    .attention_forward = cuda_attention_forward,
    .attention_backward = cuda_attention_backward,
    .gelu_forward = cuda_gelu_forward,
    .gelu_backward = cuda_gelu_backward,
    .residual_forward = cuda_residual_forward,
    .softmax_crossentropy_forward = cuda_softmax_crossentropy_forward,
    .softmax_crossentropy_backward = cuda_softmax_crossentropy_backward,
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
