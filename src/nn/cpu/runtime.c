/* The runtime's kernels on the CPU (AdamW, which runs on the home stream alone: adamw.c).
 * They run on the comm streams' threads as well as on the compute thread, so they are
 * single-threaded loops: an OpenMP team of their own would fight the compute thread's for
 * the cores. The grad norm's sum of squares is the exception: like AdamW it is launched
 * only on the home stream (fsdp_model_measure_grad_norm). */
#include <math.h>
#include <string.h>

#include "cpu.h"
#include "fsdp/rng.h"

/* The contract (../contract.c) allows a cast's sides to overlap only in nn_cast's
 * in-place forms (dtype.h's in-place conversions). */
void cpu_cast(void *p) {
  const struct cast_args *a = p;
  size_t n = tensor_numel(&a->dst);
  enum dtype from = a->src.dtype, to = a->dst.dtype;
  if (from == to) {
    if (a->dst.data != a->src.data) memcpy(a->dst.data, a->src.data, tensor_bytes(&a->dst));
  } else if (from == DTYPE_F32) {
    if (a->dst.data == a->src.data)
      dtype_pack_in_place(to, a->dst.data, n);
    else
      dtype_pack(to, a->src.data, a->dst.data, n);
  } else if ((char *)a->src.data == (char *)a->dst.data + 2 * n) {
    dtype_unpack_upper_in_place(from, a->dst.data, n);
  } else {
    dtype_unpack(from, a->src.data, a->dst.data, n);
  }
}

void cpu_round(void *p) {
  const struct round_args *a = p;
  dtype_round(a->dtype, f32(a->x), tensor_numel(&a->x));
}

void cpu_add(void *p) {
  const struct add_args *a = p;
  float *y = f32(a->y);
  const float *x = f32(a->x);
  for (size_t i = 0, n = tensor_numel(&a->y); i < n; i++) y[i] += x[i];
}

/* In double, the norm's own precision, rounded once to the scale. */
void cpu_grad_clip_scale(void *p) {
  const struct grad_clip_scale_args *a = p;
  double norm = sqrt(*(const double *)a->squares.data) * a->unscale;
  double clip = a->max_norm > 0.0f && norm > a->max_norm ? a->max_norm / (norm + 1e-6) : 1.0;
  *f32(a->scale) = (float)(a->unscale * clip);
}

/* The sum of x (or of its squares) in double, element i into accumulator i % LANES: the
 * lanes' chains are independent, so the loop vectorizes and the adds overlap (one chain
 * waited on each add's latency: the grad norm's sum of squares took 6 ms a step of
 * shakespeare-char's 10.7M parameters). The lanes are then added pairwise, in one fixed
 * order: the same bits on every run. */
enum { LANES = 32 };

static double sum_of(const float *x, size_t n, int squares) {
  double lane[LANES] = {0};
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) lane[j] += squares ? (double)x[i + j] * x[i + j] : (double)x[i + j];
  for (; i < n; i++) lane[i % LANES] += squares ? (double)x[i] * x[i] : (double)x[i];
  for (int width = LANES / 2; width > 0; width /= 2)
    for (int j = 0; j < width; j++) lane[j] += lane[j + width];
  return lane[0];
}

void cpu_sum(void *p) {
  const struct sum_args *a = p;
  *(double *)a->sum.data += sum_of(f32(a->x), tensor_numel(&a->x), 0);
}

/* The sum of squares of a whole gradient shard, in blocks spread over the threads (one
 * core alone reads 7 GB/s: 6 ms a step of shakespeare-char's 10.7M parameters). The
 * blocks depend on n alone, and their sums are added pairwise in one fixed order: the
 * same bits for any thread count. */
enum { SQUARES_BLOCKS = 256, SQUARES_BLOCK_LEAST = 1 << 14 };

void cpu_sum_squares(void *p) {
  const struct sum_args *a = p;
  const float *x = f32(a->x);
  size_t n = tensor_numel(&a->x), block = (n + SQUARES_BLOCKS - 1) / SQUARES_BLOCKS;
  block = block < SQUARES_BLOCK_LEAST ? SQUARES_BLOCK_LEAST : (block + LANES - 1) / LANES * LANES;
  int blocks = (int)((n + block - 1) / block);
  double partial[SQUARES_BLOCKS] = {0};
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (int b = 0; b < blocks; b++) {
    size_t first = (size_t)b * block;
    partial[b] = sum_of(x + first, n - first < block ? n - first : block, 1);
  }
  for (int width = SQUARES_BLOCKS / 2; width > 0; width /= 2)
    for (int b = 0; b < width; b++) partial[b] += partial[b + width];
  *(double *)a->sum.data += partial[0];
}

void cpu_fill(void *p) {
  const struct fill_args *a = p;
  float *x = f32(a->x);
  for (size_t i = 0, n = tensor_numel(&a->x); i < n; i++) x[i] = a->value;
}

void cpu_init_normal(void *p) {
  const struct init_normal_args *a = p;
  float *x = f32(a->x);
  for (size_t i = 0, n = tensor_numel(&a->x); i < n; i++) x[i] = a->std * rng_normal(a->seed, a->stream, a->first + i);
}

void cpu_init_trunc_normal(void *p) {
  const struct init_trunc_normal_args *a = p;
  float *x = f32(a->x);
  for (size_t i = 0, n = tensor_numel(&a->x); i < n; i++)
    x[i] = rng_trunc_normal(a->seed, a->stream, a->first + i, a->std, a->bound);
}
