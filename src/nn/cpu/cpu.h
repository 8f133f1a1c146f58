/* Private to src/nn/cpu: the CPU kernels (OpenMP loops, and oneDNN for the matrix
 * products: onednn.h) and how they read their tensors: the fp32 ones here, the
 * compute-dtype ones through typed.h. Each kernel takes its op's argument struct (../ops.h). */
#ifndef FSDP_NN_CPU_H
#define FSDP_NN_CPU_H

#include "variant.h"

#include "../ops.h"
#include "fsdp/error.h"

/* A tensor's data as the kernels read it: the op's contract (../contract.c) has checked
 * its dtype and its presence (data NULL: an optional operand that is absent). f32 is
 * for the operands that are fp32 whatever the compute dtype (statistics, losses, the
 * runtime's buffers). */
static inline float *f32(struct tensor t) { return t.data; }
static inline const int *i32(struct tensor t) { return t.data; }
/* Sizes as the kernels' int loops take them; the model checks they fit (model_family.batch_problem). */
static inline int dim(struct tensor t, int i) { return (int)t.shape[i]; }
static inline int rows(struct tensor t) { return (int)tensor_rows(&t); }
static inline int cols(struct tensor t) { return (int)tensor_cols(&t); }
static inline int numel(struct tensor t) { return (int)tensor_numel(&t); }

/* The calling thread's scratch, at least bytes long and 64-byte aligned: kept for the
 * thread's next request, which may move it (scratch.c). */
void *cpu_scratch(size_t bytes);
/* A second such buffer, for the operands a tile product packs (tile_product.h) while
 * its caller holds cpu_scratch. */
void *cpu_pack_scratch(size_t bytes);

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
void cpu_classifier(void *args);
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
void cpu_grad_clip_scale(void *args);
void cpu_sum(void *args);
void cpu_sum_squares(void *args);
void cpu_fill(void *args);
void cpu_init_normal(void *args);
void cpu_init_trunc_normal(void *args);
void cpu_adamw(void *args);

#endif
