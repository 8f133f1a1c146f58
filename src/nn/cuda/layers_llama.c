/* Llama 3's ops on the GPU (RMSNorm, RoPE, SwiGLU, and the truncated-normal init of its
 * weights; grouped-query attention is attention.c's), twins of ../cpu/{rmsnorm,rope,swiglu,
 * runtime}.c. Each launcher takes its tensors as the op's contract checked them, checks
 * that the kernels' int sizes hold them, and enqueues the kernels (llama_kernels.h) on
 * the op's stream; a launch that fails ends the job with the op's name. The layer ops take each tensor in its own dtype (the op's
 * compute dtype, the statistics in fp32: ../contract.c) and compute in fp32. */
#include <cuda_runtime.h>
#include <limits.h>

#include "cuda.h"
#include "launch.h"
#include "fsdp/error.h"
#include "fsdp/stream.h"
#include "llama_kernels.h"

/* An operand as the kernels take it (data NULL when an optional one is absent). */
static struct gpu_buf buf(struct tensor t) { return (struct gpu_buf){t.data, t.dtype}; }

/* Sizes as the kernels' int indices and grids take them. */
static int as_int(size_t n) {
  FSDP_CHECK(n <= INT_MAX);
  return (int)n;
}
static int dim(struct tensor t, int i) { return as_int(t.shape[i]); }

void cuda_rmsnorm_forward(void *p) {
  const struct rmsnorm_args *a = p;
  int N = as_int(tensor_rows(&a->inp)), C = as_int(tensor_cols(&a->inp));
  layer_check("rmsnorm_forward", gpu_rmsnorm_forward(buf(a->out), buf(a->rstd), buf(a->inp), buf(a->weight), a->eps, N, C,
                                               layer_stream()));
}

void cuda_rmsnorm_backward(void *p) {
  const struct rmsnorm_backward_args *a = p;
  int N = as_int(tensor_rows(&a->inp)), C = as_int(tensor_cols(&a->inp));
  layer_check("rmsnorm_backward", gpu_rmsnorm_backward(buf(a->dinp), buf(a->dweight), buf(a->dout),
                                                 buf(a->inp), buf(a->weight), buf(a->rstd), N, C, a->scratch,
                                                       layer_stream()));
}

void cuda_rope_table(void *p) {
  const struct rope_table_args *a = p;
  layer_check("rope_table", gpu_rope_table(buf(a->table), dim(a->table, 0), dim(a->table, 1), a->rope, layer_stream()));
}

void cuda_rope_forward(void *p) {
  const struct rope_args *a = p;
  layer_check("rope_forward", gpu_rope_forward(buf(a->out), buf(a->inp), buf(a->table), dim(a->inp, 0), dim(a->inp, 1),
                                         dim(a->inp, 2), dim(a->inp, 3), layer_stream()));
}

void cuda_rope_backward(void *p) {
  const struct rope_backward_args *a = p;
  layer_check("rope_backward", gpu_rope_backward(buf(a->dinp), buf(a->dout), buf(a->table), dim(a->dout, 0),
                                           dim(a->dout, 1), dim(a->dout, 2), dim(a->dout, 3), layer_stream()));
}

void cuda_swiglu_forward(void *p) {
  const struct swiglu_args *a = p;
  layer_check("swiglu_forward",
        gpu_swiglu_forward(buf(a->out), buf(a->gate), buf(a->up), tensor_numel(&a->gate), layer_stream()));
}

void cuda_swiglu_backward(void *p) {
  const struct swiglu_backward_args *a = p;
  layer_check("swiglu_backward", gpu_swiglu_backward(buf(a->dgate), buf(a->dup), a->mode == NN_GRAD_ADD, buf(a->dout),
                                                     buf(a->gate), buf(a->up), tensor_numel(&a->gate), layer_stream()));
}

void cuda_init_trunc_normal(void *p) {
  const struct init_trunc_normal_args *a = p;
  layer_check("init_trunc_normal", gpu_init_trunc_normal(a->x.data, tensor_numel(&a->x), a->seed, a->stream, a->first,
                                                   a->std, a->bound, layer_stream()));
}
