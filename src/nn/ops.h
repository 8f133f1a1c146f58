/* Private to src/nn: the table each backend fills (cpu/, cuda/) and the argument of each
 * op, which nn.c packs and launches on the op's stream. An entry takes its op's argument
 * struct as void *, so that one launch path serves every op. */
#ifndef FSDP_NN_OPS_H
#define FSDP_NN_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/nn.h"

struct encoder_args { struct tensor out, inp, wte, wpe; };
/* scratch: encoder_backward_scratch bytes (NULL: none). */
struct encoder_backward_args { struct tensor dwte, dwpe, dout, inp; void *scratch; };
struct layernorm_args { struct tensor out, mean, rstd, inp, weight, bias; };
/* scratch, here and in matmul_backward and rmsnorm_backward: the column_sums_scratch bytes
 * of the op's parameter gradients (NULL: none). */
struct layernorm_backward_args {
  struct tensor dinp, dweight, dbias, dout, inp, weight, mean, rstd;
  void *scratch;
};
/* workspace: the backend's gemm_workspace bytes from the device's allocator (NULL: none). */
struct matmul_args { struct tensor out, inp, weight, bias; void *workspace; };
struct matmul_backward_args {
  struct tensor dinp, dweight, dbias, dout, inp, weight;
  void *workspace, *scratch;
  enum nn_grad dinp_mode;
};
/* lse (B, NH, T) fp32: each query's log-sum-exp of its scores, what the backward
 * recomputes the probabilities from. */
struct attention_args { struct tensor out, lse, qkv; };
struct attention_backward_args { struct tensor dqkv, dout, qkv, out, lse; enum nn_grad dqkv_mode; };
struct gelu_args { struct tensor out, inp; };
struct gelu_backward_args { struct tensor dinp, inp, dout; enum nn_grad dinp_mode; };
struct residual_args { struct tensor out, a, b; };
struct classifier_args {
  struct tensor dlogits, losses, logits, targets;
  int vocab;
  float dloss;
};
struct rmsnorm_args { struct tensor out, rstd, inp, weight; float eps; };
struct rmsnorm_backward_args { struct tensor dinp, dweight, dout, inp, weight, rstd; void *scratch; };
struct rope_table_args { struct tensor table; struct nn_rope rope; };
struct rope_args { struct tensor out, inp, table; };
struct rope_backward_args { struct tensor dinp, dout, table; };
struct swiglu_args { struct tensor out, gate, up; };
struct swiglu_backward_args { struct tensor dgate, dup, dout, gate, up; enum nn_grad mode; };
struct gqa_attention_args { struct tensor out, lse, q, k, v; };
struct gqa_attention_backward_args { struct tensor dq, dk, dv, dout, q, k, v, out, lse; enum nn_grad mode; };
struct cached_attention_args { struct tensor out, q, k, v; };
struct cast_args { struct tensor dst, src; };
struct round_args { struct tensor x; enum dtype dtype; };
struct add_args { struct tensor y, x; };
struct grad_clip_scale_args { struct tensor scale, squares; float unscale, max_norm; };
/* scratch: sum_scratch bytes (NULL: none). */
struct sum_args { struct tensor sum, x; void *scratch; };
struct fill_args { struct tensor x; float value; };
struct init_normal_args { struct tensor x; uint64_t seed, stream, first; float std; };
struct init_trunc_normal_args { struct tensor x; uint64_t seed, stream, first; float std, bound; };
struct adamw_args { struct tensor param, rounded, grad, grad_scale, m, v; struct nn_adamw h; };

typedef void (*nn_kernel)(void *args);

struct nn_backend {
  const char *name;
  enum dtype (*compute_dtype)(enum dtype param_dtype);
  unsigned computes_in; /* the compute dtypes its layer kernels take: a bit 1u << DTYPE_... each */
  /* Device memory some ops need beside their tensors, in bytes (0: none). nn.c allocates
   * it in stream order around the op, so that the planner counts it as a run uses it. */
  size_t (*sum_scratch)(size_t n);                                 /* for a sum of n elements */
  size_t (*encoder_backward_scratch)(size_t tokens, size_t vocab); /* dwte's, for tokens positions */
  size_t (*column_sums_scratch)(size_t rows, size_t cols);         /* column sums of a (rows, cols) */
  size_t gemm_workspace;                                           /* matmul's */
  nn_kernel encoder_forward, encoder_backward, layernorm_forward, layernorm_backward, matmul_forward,
      matmul_backward, attention_forward, attention_backward, gelu_forward, gelu_backward, residual_forward,
      classifier, rmsnorm_forward, rmsnorm_backward, rope_table,
      rope_forward, rope_backward, swiglu_forward, swiglu_backward, gqa_attention_forward, gqa_attention_backward,
      cached_attention_forward, cast, round, add, sum, sum_squares, fill, init_normal, init_trunc_normal,
      grad_clip_scale, adamw;
};

/* The stream of the op being launched, while its launcher runs. A cuda launcher runs
 * inside stream_launch on the launching thread (fsdp/stream.h) and enqueues its work on
 * this stream; the argument structs leave it out, as the CPU kernels never need it. */
struct stream *nn_launch_stream(void);

/* The CPU kernels compiled for simd_isa()'s instruction set (cpu/backend.c). */
const struct nn_backend *nn_cpu_backend(void);
/* In a build without CUDA, its sizes and contracts with no kernels (cuda/table.c). */
const struct nn_backend *nn_cuda_backend(void);

#endif
