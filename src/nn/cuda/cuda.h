/* Private to src/nn/cuda: the cuda backend's launchers, which take their op's argument
 * struct (../ops.h) as the CPU kernels do, check it on the host, and enqueue the GPU
 * work (kernels.h) on the op's stream. */
#ifndef FSDP_NN_CUDA_H
#define FSDP_NN_CUDA_H

#include "../ops.h"

void cuda_cast(void *args);
void cuda_round(void *args);
void cuda_add(void *args);
void cuda_sum(void *args);
void cuda_sum_squares(void *args);
void cuda_fill(void *args);
void cuda_init_normal(void *args);
void cuda_grad_clip_scale(void *args);
void cuda_adamw(void *args);

/* GPT-2's layers: layers_gpt2.c, matmul.c, attention.c. */
void cuda_encoder_forward(void *args);
void cuda_encoder_backward(void *args);
void cuda_layernorm_forward(void *args);
void cuda_layernorm_backward(void *args);
void cuda_matmul_forward(void *args);
void cuda_matmul_backward(void *args);
void cuda_attention_forward(void *args);
void cuda_attention_backward(void *args);
void cuda_gelu_forward(void *args);
void cuda_gelu_backward(void *args);
void cuda_residual_forward(void *args);
void cuda_classifier(void *args);
/* Llama 3's ops (layers_llama.c; attention's in attention.c). */
void cuda_rmsnorm_forward(void *args);
void cuda_rmsnorm_backward(void *args);
void cuda_rope_table(void *args);
void cuda_rope_forward(void *args);
void cuda_rope_backward(void *args);
void cuda_swiglu_forward(void *args);
void cuda_swiglu_backward(void *args);
void cuda_gqa_attention_forward(void *args);
void cuda_gqa_attention_backward(void *args);
void cuda_cached_attention_forward(void *args);
void cuda_init_trunc_normal(void *args);

#endif
