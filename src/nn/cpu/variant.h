/* Private to src/nn/cpu: the kernels whose loops the compiler vectorizes are built once
 * per instruction set (CMakeLists.txt compiles them with NN_CPU_VARIANT set to scalar,
 * avx2 and avx512, each with its -m flags, on x86-64; once elsewhere), and backend.c picks
 * the table of simd_isa()'s. Each such file's external names carry the variant's suffix
 * (cpu_gelu_forward_avx2), so that the copies link side by side. The files with vector
 * paths of their own (lanes.c, exp_row.c, tile_product.c, adamw.c) and the glue
 * (onednn.c, scratch.c, threads.c, backend.c) are built once and take no suffix. */
#ifndef FSDP_NN_CPU_VARIANT_H
#define FSDP_NN_CPU_VARIANT_H

#ifdef NN_CPU_VARIANT
#define NN_CPU_PASTE_(name, variant) name##_##variant
#define NN_CPU_PASTE(name, variant) NN_CPU_PASTE_(name, variant)
#define NN_CPU_VARIANT_NAME(name) NN_CPU_PASTE(name, NN_CPU_VARIANT)

#define NN_CPU NN_CPU_VARIANT_NAME(NN_CPU)
#define elementwise NN_CPU_VARIANT_NAME(elementwise)
#define cpu_encoder_forward NN_CPU_VARIANT_NAME(cpu_encoder_forward)
#define cpu_encoder_backward NN_CPU_VARIANT_NAME(cpu_encoder_backward)
#define cpu_layernorm_forward NN_CPU_VARIANT_NAME(cpu_layernorm_forward)
#define cpu_layernorm_backward NN_CPU_VARIANT_NAME(cpu_layernorm_backward)
#define cpu_matmul_forward NN_CPU_VARIANT_NAME(cpu_matmul_forward)
#define cpu_matmul_backward NN_CPU_VARIANT_NAME(cpu_matmul_backward)
#define cpu_attention_forward NN_CPU_VARIANT_NAME(cpu_attention_forward)
#define cpu_attention_backward NN_CPU_VARIANT_NAME(cpu_attention_backward)
#define cpu_gqa_attention_forward NN_CPU_VARIANT_NAME(cpu_gqa_attention_forward)
#define cpu_gqa_attention_backward NN_CPU_VARIANT_NAME(cpu_gqa_attention_backward)
#define cpu_cached_attention_forward NN_CPU_VARIANT_NAME(cpu_cached_attention_forward)
#define cpu_gelu_forward NN_CPU_VARIANT_NAME(cpu_gelu_forward)
#define cpu_gelu_backward NN_CPU_VARIANT_NAME(cpu_gelu_backward)
#define cpu_residual_forward NN_CPU_VARIANT_NAME(cpu_residual_forward)
#define cpu_classifier NN_CPU_VARIANT_NAME(cpu_classifier)
#define cpu_rmsnorm_forward NN_CPU_VARIANT_NAME(cpu_rmsnorm_forward)
#define cpu_rmsnorm_backward NN_CPU_VARIANT_NAME(cpu_rmsnorm_backward)
#define cpu_rope_table NN_CPU_VARIANT_NAME(cpu_rope_table)
#define cpu_rope_forward NN_CPU_VARIANT_NAME(cpu_rope_forward)
#define cpu_rope_backward NN_CPU_VARIANT_NAME(cpu_rope_backward)
#define cpu_swiglu_forward NN_CPU_VARIANT_NAME(cpu_swiglu_forward)
#define cpu_swiglu_backward NN_CPU_VARIANT_NAME(cpu_swiglu_backward)
#define cpu_cast NN_CPU_VARIANT_NAME(cpu_cast)
#define cpu_round NN_CPU_VARIANT_NAME(cpu_round)
#define cpu_add NN_CPU_VARIANT_NAME(cpu_add)
#define cpu_grad_clip_scale NN_CPU_VARIANT_NAME(cpu_grad_clip_scale)
#define cpu_sum NN_CPU_VARIANT_NAME(cpu_sum)
#define cpu_sum_squares NN_CPU_VARIANT_NAME(cpu_sum_squares)
#define cpu_fill NN_CPU_VARIANT_NAME(cpu_fill)
#define cpu_init_normal NN_CPU_VARIANT_NAME(cpu_init_normal)
#define cpu_init_trunc_normal NN_CPU_VARIANT_NAME(cpu_init_trunc_normal)
#endif

#endif
