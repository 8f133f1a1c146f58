/* Private to src/nn/cpu: the CPU kernels (OpenMP loops, and oneDNN for the matrix
 * products: onednn.h) and how they read their tensors. Each kernel takes its op's
 * argument struct (../ops.h). */
#ifndef FSDP_NN_CPU_H
#define FSDP_NN_CPU_H

#include "../ops.h"
#include "fsdp/error.h"

static inline float *f32(struct tensor t) {
  FSDP_CHECK(t.dtype == DTYPE_F32 && t.data);
  return t.data;
}
/* An optional output: NULL when absent. */
static inline float *f32_or_null(struct tensor t) { return t.data ? f32(t) : NULL; }
static inline const int *i32(struct tensor t) {
  FSDP_CHECK(t.dtype == DTYPE_I32 && t.data);
  return t.data;
}
/* Sizes as the kernels' int loops take them; the model checks they fit (model_family.batch_problem). */
static inline int dim(struct tensor t, int i) { return (int)t.shape[i]; }
static inline int rows(struct tensor t) { return (int)tensor_rows(&t); }
static inline int cols(struct tensor t) { return (int)tensor_cols(&t); }
static inline int numel(struct tensor t) { return (int)tensor_numel(&t); }

size_t cpu_attention_backward_scratch(const struct tensor *att);

void cpu_encoder_forward(void *args);
void cpu_encoder_backward(void *args);
void cpu_layernorm_forward(void *args);
void cpu_layernorm_backward(void *args);
void cpu_matmul_forward(void *args);
void cpu_matmul_backward(void *args);
void cpu_attention_forward(void *args);
void cpu_attention_backward(void *args);
void cpu_gelu_forward(void *args);
void cpu_gelu_backward(void *args);
void cpu_residual_forward(void *args);
void cpu_softmax_crossentropy_forward(void *args);
void cpu_softmax_crossentropy_backward(void *args);
void cpu_rmsnorm_forward(void *args);
void cpu_rmsnorm_backward(void *args);
void cpu_rope_table(void *args);
void cpu_rope_forward(void *args);
void cpu_rope_backward(void *args);
void cpu_swiglu_forward(void *args);
void cpu_swiglu_backward(void *args);
void cpu_gqa_attention_forward(void *args);
void cpu_gqa_attention_backward(void *args);
void cpu_cached_attention_forward(void *args);
void cpu_cast(void *args);
void cpu_round(void *args);
void cpu_add(void *args);
void cpu_scale(void *args);
void cpu_sum(void *args);
void cpu_sum_squares(void *args);
void cpu_fill(void *args);
void cpu_init_normal(void *args);
void cpu_init_trunc_normal(void *args);
void cpu_adamw(void *args);

#endif
