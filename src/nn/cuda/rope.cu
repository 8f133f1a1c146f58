/* RoPE on the GPU, the twin of ../cpu/rope.c (nn.h has the math).
 *
 * The table: row t = [cos(t f_i) for i < hd/2 | sin(t f_i) for i < hd/2], each f_i and
 * angle computed with the CPU's roundings, step for step: e = 2i/hd and 1/theta^e in
 * fp32 around an fp64 pow, Llama 3.1's scaling in fp64 rounded to fp32, the angle an
 * fp32 product t * f_i, its cos and sin in fp64 rounded to fp32. Every arithmetic step
 * is an _rn intrinsic, so nvcc contracts none into a fused multiply-add that the CPU's
 * C (no contraction) would not do. What can differ is CUDA's fp64 pow, cos and sin (an
 * ulp or two of fp64) against glibc's: rounded to fp32 that changes a value only where
 * the fp64 result lies within those bits of an fp32 rounding boundary, one ulp then, as
 * in init_normal.cu. A thread per (t, i): the table is built once per model.
 *
 * The rotation: a thread per pair (x_i, x_{i+hd/2}) of a row (b, t, h), which it reads
 * whole before writing (so out may be inp), in the CPU's order of fp32 operations, _rn
 * again: with fp32 tensors the result is the CPU's to the bit, given the same table. */
#include "elem.cuh"
#include "grid.cuh"
#include "llama_kernels.h"

static __device__ float base_inv_freq(int i, int hd, float theta) {
  float e = __fdiv_rn((float)(2 * i), (float)hd);
  return __fdiv_rn(1.0f, __double2float_rn(pow((double)theta, (double)e)));
}

static __device__ double llama3_scaled(double f, struct nn_rope r) {
  const double TWO_PI = 6.283185307179586;
  double L = r.original_max_position_embeddings;
  double wavelen = __ddiv_rn(TWO_PI, f);
  if (wavelen < __ddiv_rn(L, (double)r.high_freq_factor)) return f;
  if (wavelen > __ddiv_rn(L, (double)r.low_freq_factor)) return __ddiv_rn(f, (double)r.factor);
  double s = __ddiv_rn(__dsub_rn(__ddiv_rn(L, wavelen), (double)r.low_freq_factor),
                       __dsub_rn((double)r.high_freq_factor, (double)r.low_freq_factor));
  return __dadd_rn(__ddiv_rn(__dmul_rn(__dsub_rn(1.0, s), f), (double)r.factor), __dmul_rn(s, f));
}

static __global__ void rope_table_kernel(struct gpu_buf table, int maxT, int hd, struct nn_rope r) {
  int half = hd / 2;
  GRID_STRIDE(p, 0, (size_t)maxT * half) {
    int t = (int)(p / half), i = (int)(p % half);
    float f = base_inv_freq(i, hd, r.theta);
    if (r.factor > 0.0f) f = __double2float_rn(llama3_scaled(f, r));
    double angle = __fmul_rn((float)t, f);
    elem_set(table, (size_t)t * hd + i, __double2float_rn(cos(angle)));
    elem_set(table, (size_t)t * hd + half + i, __double2float_rn(sin(angle)));
  }
}

/* Pair p of the pairs (B, T, H, hd/2): where its row starts, and its position t. */
struct pair_at {
  size_t row;
  int t, i;
};

static __device__ struct pair_at locate_pair(size_t p, int T, int H, int half, int hd) {
  size_t row = p / half; /* (b * T + t) * H + h */
  struct pair_at at = {row * hd, (int)((row / H) % T), (int)(p % half)};
  return at;
}

static __global__ void rope_forward_kernel(struct gpu_buf out, struct gpu_buf inp, struct gpu_buf table, int B,
                                           int T, int H, int hd) {
  int half = hd / 2;
  GRID_STRIDE(p, 0, (size_t)B * T * H * half) {
    struct pair_at at = locate_pair(p, T, H, half, hd);
    float cs = elem_get(table, (size_t)at.t * hd + at.i), sn = elem_get(table, (size_t)at.t * hd + half + at.i);
    float x1 = elem_get(inp, at.row + at.i), x2 = elem_get(inp, at.row + half + at.i);
    elem_set(out, at.row + at.i, __fsub_rn(__fmul_rn(x1, cs), __fmul_rn(x2, sn)));
    elem_set(out, at.row + half + at.i, __fadd_rn(__fmul_rn(x2, cs), __fmul_rn(x1, sn)));
  }
}

/* The transpose of the rotation: dx_i += d_i cos + d_{i+hd/2} sin, dx_{i+hd/2} +=
 * d_{i+hd/2} cos - d_i sin. */
static __global__ void rope_backward_kernel(struct gpu_buf dinp, struct gpu_buf dout, struct gpu_buf table, int B,
                                            int T, int H, int hd) {
  int half = hd / 2;
  GRID_STRIDE(p, 0, (size_t)B * T * H * half) {
    struct pair_at at = locate_pair(p, T, H, half, hd);
    float cs = elem_get(table, (size_t)at.t * hd + at.i), sn = elem_get(table, (size_t)at.t * hd + half + at.i);
    float d1 = elem_get(dout, at.row + at.i), d2 = elem_get(dout, at.row + half + at.i);
    size_t i1 = at.row + at.i, i2 = at.row + half + at.i;
    elem_set(dinp, i1, __fadd_rn(elem_get(dinp, i1), __fadd_rn(__fmul_rn(d1, cs), __fmul_rn(d2, sn))));
    elem_set(dinp, i2, __fadd_rn(elem_get(dinp, i2), __fsub_rn(__fmul_rn(d2, cs), __fmul_rn(d1, sn))));
  }
}

cudaError_t gpu_rope_table(struct gpu_buf table, int maxT, int hd, struct nn_rope rope, cudaStream_t s) {
  size_t n = (size_t)maxT * (hd / 2);
  if (n == 0) return cudaSuccess;
  rope_table_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(table, maxT, hd, rope);
  return cudaGetLastError();
}

cudaError_t gpu_rope_forward(struct gpu_buf out, struct gpu_buf inp, struct gpu_buf table, int B, int T, int H,
                             int hd, cudaStream_t s) {
  size_t n = (size_t)B * T * H * (hd / 2);
  if (n == 0) return cudaSuccess;
  rope_forward_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(out, inp, table, B, T, H, hd);
  return cudaGetLastError();
}

cudaError_t gpu_rope_backward(struct gpu_buf dinp, struct gpu_buf dout, struct gpu_buf table, int B, int T, int H,
                              int hd, cudaStream_t s) {
  size_t n = (size_t)B * T * H * (hd / 2);
  if (n == 0) return cudaSuccess;
  rope_backward_kernel<<<blocks_for(n), BLOCK_THREADS, 0, s>>>(dinp, dout, table, B, T, H, hd);
  return cudaGetLastError();
}
