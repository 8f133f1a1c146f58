/* The runtime's ops on the GPU, twins of ../cpu/runtime.c: the same checks of the
 * tensors' dtypes, and the same results to the bit but for init_normal (init_normal.cu)
 * and the fp64 sums (sum.cu). Each launcher runs on the launching thread and enqueues
 * its kernels on the op's stream; a launch that fails ends the job with the op's name. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda.h"
#include "launch.h"
#include "fsdp/error.h"
#include "fsdp/stream.h"
#include "kernels.h"

static float *f32(struct tensor t) {
  FSDP_CHECK(t.dtype == DTYPE_F32 && t.data);
  return t.data;
}

static double *f64_scalar(struct tensor t) {
  FSDP_CHECK(t.dtype == DTYPE_F64 && tensor_numel(&t) == 1);
  return t.data;
}

static int is_16bit(enum dtype d) { return d == DTYPE_BF16 || d == DTYPE_F16; }

/* The GPU converts every element of an out-of-place cast at once, so its two sides must
 * not overlap (the CPU's memmove would allow it for equal dtypes; the runtime never asks). */
static void check_apart(const struct cast_args *a) {
  uintptr_t dst = (uintptr_t)a->dst.data, src = (uintptr_t)a->src.data;
  if (dst < src + tensor_bytes(&a->src) && src < dst + tensor_bytes(&a->dst))
    fsdp_fatal("nn_cast: on cuda, dst and src may overlap only in nn_cast's in-place forms");
}

void cuda_cast(void *p) {
  const struct cast_args *a = p;
  size_t n = tensor_numel(&a->dst);
  enum dtype from = a->src.dtype, to = a->dst.dtype;
  cudaStream_t s = layer_stream();
  if (from == to) {
    if (a->dst.data == a->src.data) return;
    check_apart(a);
    layer_check("cast", cudaMemcpyAsync(a->dst.data, a->src.data, tensor_bytes(&a->dst), cudaMemcpyDeviceToDevice, s));
  } else if (from == DTYPE_F32 && is_16bit(to)) {
    if (a->dst.data == a->src.data) {
      layer_check("cast", gpu_pack_in_place(to, a->dst.data, n, s));
    } else {
      check_apart(a);
      layer_check("cast", gpu_pack(to, a->src.data, a->dst.data, n, s));
    }
  } else if (is_16bit(from) && to == DTYPE_F32) {
    if ((char *)a->src.data == (char *)a->dst.data + 2 * n) {
      layer_check("cast", gpu_unpack_upper_in_place(from, a->dst.data, n, s));
    } else {
      check_apart(a);
      layer_check("cast", gpu_unpack(from, a->src.data, a->dst.data, n, s));
    }
  } else {
    fsdp_fatal("nn_cast: no cast from %s to %s", dtype_name(from), dtype_name(to));
  }
}

/* Rounding to fp32 (or to a dtype that is no float format) leaves x as it is, as dtype_round does. */
void cuda_round(void *p) {
  const struct round_args *a = p;
  float *x = f32(a->x);
  if (is_16bit(a->dtype)) layer_check("round", gpu_round(a->dtype, x, tensor_numel(&a->x), layer_stream()));
}

void cuda_add(void *p) {
  const struct add_args *a = p;
  layer_check("add", gpu_add(f32(a->y), f32(a->x), tensor_numel(&a->y), layer_stream()));
}

void cuda_scale(void *p) {
  const struct scale_args *a = p;
  layer_check("scale", gpu_scale(f32(a->x), a->scale, tensor_numel(&a->x), layer_stream()));
}

void cuda_sum(void *p) {
  const struct sum_args *a = p;
  layer_check("sum", gpu_sum(f64_scalar(a->sum), f32(a->x), tensor_numel(&a->x), 0, layer_stream()));
}

void cuda_sum_squares(void *p) {
  const struct sum_args *a = p;
  layer_check("sum_squares", gpu_sum(f64_scalar(a->sum), f32(a->x), tensor_numel(&a->x), 1, layer_stream()));
}

void cuda_fill(void *p) {
  const struct fill_args *a = p;
  layer_check("fill", gpu_fill(f32(a->x), a->value, tensor_numel(&a->x), layer_stream()));
}

void cuda_init_normal(void *p) {
  const struct init_normal_args *a = p;
  layer_check("init_normal",
        gpu_init_normal(f32(a->x), tensor_numel(&a->x), a->seed, a->stream, a->first, a->std, layer_stream()));
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
  layer_check("adamw", gpu_adamw(f32(a->param), f32(a->grad), f32(a->m), f32(a->v), tensor_numel(&a->param), g,
                           layer_stream()));
}
