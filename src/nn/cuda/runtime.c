/* The runtime's ops on the GPU, twins of ../cpu/runtime.c: the same results to the bit
 * but for init_normal (init_normal.cu) and the fp64 sums (sum.cu). Each launcher takes
 * its tensors as the op's contract checked them (../contract.c: the dtypes, and a cast's
 * sides either one of nn_cast's in-place forms or apart, as the GPU converts every
 * element at once), runs on the launching thread and enqueues its kernels on the op's
 * stream; a launch that fails ends the job with the op's name. */
#include <cuda_runtime.h>

#include "cuda.h"
#include "launch.h"
#include "kernels.h"

void cuda_cast(void *p) {
  const struct cast_args *a = p;
  size_t n = tensor_numel(&a->dst);
  enum dtype from = a->src.dtype, to = a->dst.dtype;
  cudaStream_t s = layer_stream();
  if (from == to) {
    if (a->dst.data == a->src.data) return;
    layer_check("cast", cudaMemcpyAsync(a->dst.data, a->src.data, tensor_bytes(&a->dst), cudaMemcpyDeviceToDevice, s));
  } else if (from == DTYPE_F32) {
    if (a->dst.data == a->src.data)
      layer_check("cast", gpu_pack_in_place(to, a->dst.data, n, s));
    else
      layer_check("cast", gpu_pack(to, a->src.data, a->dst.data, n, s));
  } else if ((char *)a->src.data == (char *)a->dst.data + 2 * n) {
    layer_check("cast", gpu_unpack_upper_in_place(from, a->dst.data, n, s));
  } else {
    layer_check("cast", gpu_unpack(from, a->src.data, a->dst.data, n, s));
  }
}

/* Rounding to fp32 leaves x as it is, as dtype_round does. */
void cuda_round(void *p) {
  const struct round_args *a = p;
  if (a->dtype != DTYPE_F32) layer_check("round", gpu_round(a->dtype, a->x.data, tensor_numel(&a->x), layer_stream()));
}

void cuda_add(void *p) {
  const struct add_args *a = p;
  layer_check("add", gpu_add(a->y.data, a->x.data, tensor_numel(&a->y), layer_stream()));
}

void cuda_sum(void *p) {
  const struct sum_args *a = p;
  layer_check("sum", gpu_sum(a->sum.data, a->x.data, tensor_numel(&a->x), 0, a->scratch, layer_stream()));
}

void cuda_sum_squares(void *p) {
  const struct sum_args *a = p;
  layer_check("sum_squares", gpu_sum(a->sum.data, a->x.data, tensor_numel(&a->x), 1, a->scratch, layer_stream()));
}

void cuda_fill(void *p) {
  const struct fill_args *a = p;
  layer_check("fill", gpu_fill(a->x.data, a->value, tensor_numel(&a->x), layer_stream()));
}

void cuda_init_normal(void *p) {
  const struct init_normal_args *a = p;
  layer_check("init_normal",
        gpu_init_normal(a->x.data, tensor_numel(&a->x), a->seed, a->stream, a->first, a->std, layer_stream()));
}

/* decay and step_size are computed here, on the host, as cpu_adamw computes them. */
void cuda_adamw(void *p) {
  const struct adamw_args *a = p;
  const struct nn_adamw *h = &a->h;
  struct gpu_adamw g = {
      .decay = 1.0f - h->lr * h->weight_decay,
      .step_size = h->lr / h->bias_correction1,
      .beta1 = h->beta1,
      .beta2 = h->beta2,
      .eps = h->eps,
      .bias_correction2_sqrt = h->bias_correction2_sqrt,
  };
  layer_check("adamw", gpu_adamw(a->param.data, a->rounded.data, a->rounded.dtype, a->grad.data,
                                 a->grad_scale.data, a->m.data, a->v.data, tensor_numel(&a->param), g,
                                 layer_stream()));
}

void cuda_grad_clip_scale(void *p) {
  const struct grad_clip_scale_args *a = p;
  layer_check("grad_clip_scale",
              gpu_grad_clip_scale(a->scale.data, a->squares.data, a->unscale, a->max_norm, layer_stream()));
}
