/* The cuda backend's table: its compute dtypes, the scratch its kernels take, and the
 * kernels. Built without CUDA too (FSDP_CUDA_KERNELS unset), where every kernel is one
 * that ends the job: the meta device drops every launch, so `fsdp plan --device cuda`
 * plans the GPU's step there with the same contracts and sizes as in a CUDA build. */
#include "colsum.h"
#include "cuda.h"
#include "encoder.h"
#include "fsdp/error.h"
#include "scratch.h"

#ifdef FSDP_CUDA_KERNELS
#define KERNEL(op) cuda_##op
#else
static void not_built(void *args) {
  (void)args;
  fsdp_fatal("nn: this fsdp was built without the cuda kernels");
}
#define KERNEL(op) not_built
#endif

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
    .encoder_forward = KERNEL(encoder_forward),
    .encoder_backward = KERNEL(encoder_backward),
    .layernorm_forward = KERNEL(layernorm_forward),
    .layernorm_backward = KERNEL(layernorm_backward),
    .matmul_forward = KERNEL(matmul_forward),
    .matmul_backward = KERNEL(matmul_backward),
    .attention_forward = KERNEL(attention_forward),
    .attention_backward = KERNEL(attention_backward),
    .gelu_forward = KERNEL(gelu_forward),
    .gelu_backward = KERNEL(gelu_backward),
    .residual_forward = KERNEL(residual_forward),
    .classifier = KERNEL(classifier),
    .cast = KERNEL(cast),
    .round = KERNEL(round),
    .add = KERNEL(add),
    .sum = KERNEL(sum),
    .sum_squares = KERNEL(sum_squares),
    .fill = KERNEL(fill),
    .init_normal = KERNEL(init_normal),
    .grad_clip_scale = KERNEL(grad_clip_scale),
    .adamw = KERNEL(adamw),
    .rmsnorm_forward = KERNEL(rmsnorm_forward),
    .rmsnorm_backward = KERNEL(rmsnorm_backward),
    .rope_table = KERNEL(rope_table),
    .rope_forward = KERNEL(rope_forward),
    .rope_backward = KERNEL(rope_backward),
    .swiglu_forward = KERNEL(swiglu_forward),
    .swiglu_backward = KERNEL(swiglu_backward),
    .gqa_attention_forward = KERNEL(gqa_attention_forward),
    .gqa_attention_backward = KERNEL(gqa_attention_backward),
    .cached_attention_forward = KERNEL(cached_attention_forward),
    .init_trunc_normal = KERNEL(init_trunc_normal),
};

const struct nn_backend *nn_cuda_backend(void) { return &NN_CUDA; }
