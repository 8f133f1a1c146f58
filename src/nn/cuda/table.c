#include "colsum.h"
#include "cuda.h"
#include "encoder.h"
#include "gemm.h"
#include "kernels.h"

/* The GPU computes in the parameters' own dtype: bf16 and fp16 natively, fp32 as fp32. */
static enum dtype cuda_compute_dtype(enum dtype param_dtype) { return param_dtype; }

static size_t cuda_encoder_backward_scratch(size_t tokens, size_t vocab) {
  return encoder_backward_scratch_bytes(tokens, vocab);
}
static size_t cuda_column_sums_scratch(size_t rows, size_t cols) { return colsum_scratch_bytes(rows, cols); }

static const struct nn_backend NN_CUDA = {
    .name = "cuda",
    .compute_dtype = cuda_compute_dtype,
    .computes_in = 1u << DTYPE_F32 | 1u << DTYPE_BF16 | 1u << DTYPE_F16,
    .sum_scratch = gpu_sum_scratch,
    .encoder_backward_scratch = cuda_encoder_backward_scratch,
    .column_sums_scratch = cuda_column_sums_scratch,
    .gemm_workspace = GEMM_WORKSPACE_BYTES,
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
    .classifier = cuda_classifier,
    .cast = cuda_cast,
    .round = cuda_round,
    .add = cuda_add,
    .sum = cuda_sum,
    .sum_squares = cuda_sum_squares,
    .fill = cuda_fill,
    .init_normal = cuda_init_normal,
    .grad_clip_scale = cuda_grad_clip_scale,
    .adamw = cuda_adamw,
    .rmsnorm_forward = cuda_rmsnorm_forward,
    .rmsnorm_backward = cuda_rmsnorm_backward,
    .rope_table = cuda_rope_table,
    .rope_forward = cuda_rope_forward,
    .rope_backward = cuda_rope_backward,
    .swiglu_forward = cuda_swiglu_forward,
    .swiglu_backward = cuda_swiglu_backward,
    .gqa_attention_forward = cuda_gqa_attention_forward,
    .gqa_attention_backward = cuda_gqa_attention_backward,
    .cached_attention_forward = cuda_cached_attention_forward,
    .init_trunc_normal = cuda_init_trunc_normal,
};

const struct nn_backend *nn_cuda_backend(void) { return &NN_CUDA; }
