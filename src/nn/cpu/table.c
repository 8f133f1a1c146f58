#include "cpu.h"

/* The CPU computes in the parameters' dtype, as a GPU does: 16-bit parameters are
 * gathered, and their activations and gradients stored, in 16 bits (typed.h, onednn.h). */
static enum dtype cpu_compute_dtype(enum dtype param_dtype) { return param_dtype; }

/* The CPU sums into a register, and sorts the embedding's positions in host memory of its own. */
static size_t cpu_no_scratch(size_t n) {
  (void)n;
  return 0;
}
static size_t cpu_no_scratch_2d(size_t n, size_t m) {
  (void)n;
  (void)m;
  return 0;
}

/* One table a variant (variant.h): NN_CPU_scalar, NN_CPU_avx2, ... */
extern const struct nn_backend NN_CPU;
const struct nn_backend NN_CPU = {
    .name = "cpu",
    .compute_dtype = cpu_compute_dtype,
    .computes_in = 1u << DTYPE_F32 | 1u << DTYPE_BF16 | 1u << DTYPE_F16,
    .sum_scratch = cpu_no_scratch,
    .encoder_backward_scratch = cpu_no_scratch_2d,
    .column_sums_scratch = cpu_no_scratch_2d,
    .encoder_forward = cpu_encoder_forward,
    .encoder_backward = cpu_encoder_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .matmul_forward = cpu_matmul_forward,
    .matmul_backward = cpu_matmul_backward,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .residual_forward = cpu_residual_forward,
    .classifier = cpu_classifier,
    .rmsnorm_forward = cpu_rmsnorm_forward,
    .rmsnorm_backward = cpu_rmsnorm_backward,
    .rope_table = cpu_rope_table,
    .rope_forward = cpu_rope_forward,
    .rope_backward = cpu_rope_backward,
    .swiglu_forward = cpu_swiglu_forward,
    .swiglu_backward = cpu_swiglu_backward,
    .gqa_attention_forward = cpu_gqa_attention_forward,
    .gqa_attention_backward = cpu_gqa_attention_backward,
    .cached_attention_forward = cpu_cached_attention_forward,
    .cast = cpu_cast,
    .round = cpu_round,
    .add = cpu_add,
    .sum = cpu_sum,
    .sum_squares = cpu_sum_squares,
    .fill = cpu_fill,
    .init_normal = cpu_init_normal,
    .init_trunc_normal = cpu_init_trunc_normal,
    .grad_clip_scale = cpu_grad_clip_scale,
    .adamw = cpu_adamw,
};
