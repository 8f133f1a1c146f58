/* Grouped-query causal attention on the GPU, the twin of ../cpu/attention.c's gqa path.
 * q (B, T, NH, hd), k and v (B, T, NKV, hd), query head h reading kv head
 * g = h / (NH / NKV); scale = 1 / sqrt(hd). Forward, for each (b, h) and query t:
 *
 *   x_s = scale * q_t . k_s  (s <= t),   att_ts = exp(x_s - max x) / sum_s' exp(x_s' - max x)
 *   att_ts = 0 (s > t),                   out_t = sum_s att_ts v_s
 *
 * Backward, with datt_ts = dout_t . v_s and D_t = sum_s att_ts datt_ts (the softmax's
 * Jacobian applied to datt gives dpre_ts = att_ts (datt_ts - D_t)):
 *
 *   dq_t += scale * sum_{s<=t} dpre_ts k_s
 *   dk_s += scale * sum_{h in g} sum_{t>=s} dpre_ts q_t,   dv_s += sum_{h in g} sum_{t>=s} att_ts dout_t
 *
 * A straightforward version, correct for every shape up to hd = GQA_HD_MAX (flash
 * attention is a later optimisation): no T x T score buffer of its own, only the att
 * the model keeps. Rows of hd values are spread over a warp's lanes (lane l holds
 * elements l, l + 32, ..., in registers), so a dot product is a warp's coalesced read
 * and a butterfly sum, and each warp of a block takes every ATT_WARPS-th key.
 *
 * Forward: a block per query row (b, h, t). Pass 1 computes the scores and keeps an
 * online (max, sum) per warp (sum rescaled by exp(old max - new max) when the max
 * grows), merged over the warps in a fixed order; pass 2 recomputes each score (the
 * same bits: __fmul_rn keeps the scaling out of any contraction), writes
 * p = exp(x - max) * (1 / sum) to att as the CPU does, and adds p v_s to the warp's
 * running out row; the warps' rows are summed in shared memory. Recomputing q.k is
 * cheaper than a T-long buffer per row, which would not fit shared memory at long T.
 * out uses the fp32 p, not att's rounded copy.
 *
 * Backward: two kernels, so that every gradient row has one writer and no atomics
 * (deterministic, and safe on 16-bit gradients). The query kernel, a block per (b, h, t),
 * computes D_t (into fp32 scratch, B * NH * T floats: gpu_gqa_attention_backward_scratch)
 * and then dq_t, recomputing datt in a second pass. The key kernel, a block per
 * (b, g, s), walks the (h, t >= s) pairs of the heads sharing kv head g, recomputes
 * datt_ts = dout_t . v_s, reads D_t, and sums dk_s and dv_s; it reads att by column
 * (a strided read: the cost of owning the rows of dk and dv). Every sum is fp32 in
 * another order than the CPU's sgemms: the last bits differ. */
#include <math.h>

#include "elem.cuh"
#include "llama_kernels.h"
#include "reduce.cuh"

static const unsigned ATT_THREADS = 256, ATT_WARPS = ATT_THREADS / WARP_SIZE;
static const unsigned PER_LANE = GQA_HD_MAX / WARP_SIZE;

/* Lane l's elements l, l + 32, ... of the row b[at .. at + hd) (0 past hd). */
static __device__ inline void load_row(float r[PER_LANE], struct gpu_buf b, size_t at, int hd) {
  unsigned lane = threadIdx.x % WARP_SIZE;
#pragma unroll
  for (unsigned j = 0; j < PER_LANE; j++) {
    unsigned d = lane + j * WARP_SIZE;
    r[j] = d < (unsigned)hd ? elem_get(b, at + d) : 0.0f;
  }
}

/* r . b[at .. at + hd), in every lane of the warp. */
static __device__ inline float dot_row(const float r[PER_LANE], struct gpu_buf b, size_t at, int hd) {
  unsigned lane = threadIdx.x % WARP_SIZE;
  float sum = 0.0f;
#pragma unroll
  for (unsigned j = 0; j < PER_LANE; j++) {
    unsigned d = lane + j * WARP_SIZE;
    if (d < (unsigned)hd) sum += r[j] * elem_get(b, at + d);
  }
  return warp_sum_all(sum);
}

/* acc += c * b[at .. at + hd), lane-wise. */
static __device__ inline void axpy_row(float acc[PER_LANE], float c, struct gpu_buf b, size_t at, int hd) {
  unsigned lane = threadIdx.x % WARP_SIZE;
#pragma unroll
  for (unsigned j = 0; j < PER_LANE; j++) {
    unsigned d = lane + j * WARP_SIZE;
    if (d < (unsigned)hd) acc[j] += c * elem_get(b, at + d);
  }
}

/* The warps' acc rows summed (warp 0 first) and scaled: dst[at + d] = scale * sum, or
 * += when accumulate. partial is this call's own: no barrier after it is needed. */
static __device__ void store_warps_sum(const float acc[PER_LANE], float (*partial)[GQA_HD_MAX], struct gpu_buf dst,
                                       size_t at, int hd, float scale, int accumulate) {
  unsigned lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
#pragma unroll
  for (unsigned j = 0; j < PER_LANE; j++) {
    unsigned d = lane + j * WARP_SIZE;
    if (d < (unsigned)hd) partial[warp][d] = acc[j];
  }
  __syncthreads();
  for (int d = threadIdx.x; d < hd; d += blockDim.x) {
    float total = 0.0f;
    for (unsigned w = 0; w < ATT_WARPS; w++) total += partial[w][d];
    if (accumulate)
      elem_add(dst, at + d, scale * total);
    else
      elem_set(dst, at + d, scale * total);
  }
}

/* Where rows start: query-side (b, t, h) in q, out, dq and dout; kv-side (b, s, g). */
static __device__ inline size_t q_row(struct gpu_gqa_shape sh, int b, int t, int h) {
  return (((size_t)b * sh.T + t) * sh.NH + h) * sh.hd;
}
static __device__ inline size_t kv_row(struct gpu_gqa_shape sh, int b, int s, int g) {
  return (((size_t)b * sh.T + s) * sh.NKV + g) * sh.hd;
}

/* Block (b * NH + h) * T + t: att's row index, and D's index. */
struct query_block {
  int b, h, g, t;
};

static __device__ inline struct query_block locate_query(struct gpu_gqa_shape sh) {
  int t = blockIdx.x % sh.T, bh = blockIdx.x / sh.T, h = bh % sh.NH;
  struct query_block qb = {bh / sh.NH, h, h / (sh.NH / sh.NKV), t};
  return qb;
}

static __global__ void __launch_bounds__(ATT_THREADS)
    gqa_forward_kernel(struct gpu_buf out, struct gpu_buf att, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                       struct gpu_gqa_shape sh, float scale) {
  __shared__ float warp_max[ATT_WARPS], warp_total[ATT_WARPS];
  __shared__ float partial[ATT_WARPS][GQA_HD_MAX];
  struct query_block qb = locate_query(sh);
  unsigned lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
  size_t arow = (size_t)blockIdx.x * sh.T, qrow = q_row(sh, qb.b, qb.t, qb.h);
  float qr[PER_LANE];
  load_row(qr, q, qrow, sh.hd);

  /* Pass 1: an empty warp (t < its first key) keeps (-inf, 0), which adds 0 below. */
  float m = -INFINITY, l = 0.0f;
  for (int s = warp; s <= qb.t; s += ATT_WARPS) {
    float x = __fmul_rn(dot_row(qr, k, kv_row(sh, qb.b, s, qb.g), sh.hd), scale);
    float grown = fmaxf(m, x);
    l = l * expf(m - grown) + expf(x - grown);
    m = grown;
  }
  if (lane == 0) {
    warp_max[warp] = m;
    warp_total[warp] = l;
  }
  __syncthreads();
  float M = -INFINITY, L = 0.0f;
  for (unsigned w = 0; w < ATT_WARPS; w++) M = fmaxf(M, warp_max[w]);
  for (unsigned w = 0; w < ATT_WARPS; w++) L += warp_total[w] * expf(warp_max[w] - M);
  float inv = 1.0f / L;

  /* Pass 2. */
  float acc[PER_LANE] = {};
  for (int s = warp; s <= qb.t; s += ATT_WARPS) {
    size_t kv = kv_row(sh, qb.b, s, qb.g);
    float p = expf(__fmul_rn(dot_row(qr, k, kv, sh.hd), scale) - M) * inv;
    if (lane == 0) elem_set(att, arow + s, p);
    axpy_row(acc, p, v, kv, sh.hd);
  }
  for (int s = qb.t + 1 + threadIdx.x; s < sh.T; s += blockDim.x) elem_set(att, arow + s, 0.0f);
  store_warps_sum(acc, partial, out, qrow, sh.hd, 1.0f, 0);
}

/* D (B * NH * T) and, when dq is present, dq. */
static __global__ void __launch_bounds__(ATT_THREADS)
    gqa_backward_query_kernel(struct gpu_buf dq, float *D, struct gpu_buf dout, struct gpu_buf k, struct gpu_buf v,
                              struct gpu_buf att, struct gpu_gqa_shape sh, float scale) {
  __shared__ float warp_dot[ATT_WARPS];
  __shared__ float partial[ATT_WARPS][GQA_HD_MAX];
  struct query_block qb = locate_query(sh);
  unsigned lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
  size_t arow = (size_t)blockIdx.x * sh.T, qrow = q_row(sh, qb.b, qb.t, qb.h);
  float dr[PER_LANE];
  load_row(dr, dout, qrow, sh.hd);

  float dot = 0.0f;
  for (int s = warp; s <= qb.t; s += ATT_WARPS)
    dot += elem_get(att, arow + s) * dot_row(dr, v, kv_row(sh, qb.b, s, qb.g), sh.hd);
  if (lane == 0) warp_dot[warp] = dot;
  __syncthreads();
  float Dt = 0.0f;
  for (unsigned w = 0; w < ATT_WARPS; w++) Dt += warp_dot[w];
  if (threadIdx.x == 0) D[blockIdx.x] = Dt;
  if (!dq.data) return; /* the same for every thread of the block */

  float acc[PER_LANE] = {};
  for (int s = warp; s <= qb.t; s += ATT_WARPS) {
    size_t kv = kv_row(sh, qb.b, s, qb.g);
    float dpre = elem_get(att, arow + s) * (dot_row(dr, v, kv, sh.hd) - Dt);
    axpy_row(acc, dpre, k, kv, sh.hd);
  }
  store_warps_sum(acc, partial, dq, qrow, sh.hd, scale, 1);
}

/* dk and dv (either may be absent) for block (b * NKV + g) * T + s; D from the query kernel. */
static __global__ void __launch_bounds__(ATT_THREADS)
    gqa_backward_key_kernel(struct gpu_buf dk, struct gpu_buf dv, const float *D, struct gpu_buf dout,
                            struct gpu_buf q, struct gpu_buf v, struct gpu_buf att, struct gpu_gqa_shape sh,
                            float scale) {
  __shared__ float partial_k[ATT_WARPS][GQA_HD_MAX], partial_v[ATT_WARPS][GQA_HD_MAX];
  int s = blockIdx.x % sh.T, bg = blockIdx.x / sh.T, g = bg % sh.NKV, b = bg / sh.NKV;
  int group = sh.NH / sh.NKV, span = sh.T - s;
  unsigned warp = threadIdx.x / WARP_SIZE;
  size_t kvrow = kv_row(sh, b, s, g);
  float vr[PER_LANE];
  load_row(vr, v, kvrow, sh.hd);

  float dk_acc[PER_LANE] = {}, dv_acc[PER_LANE] = {};
  for (int p = warp; p < group * span; p += ATT_WARPS) {
    int h = g * group + p / span, t = s + p % span;
    size_t bht = ((size_t)b * sh.NH + h) * sh.T + t, qrow = q_row(sh, b, t, h);
    float a = elem_get(att, bht * sh.T + s);
    float dr[PER_LANE];
    load_row(dr, dout, qrow, sh.hd);
    if (dv.data) {
#pragma unroll
      for (unsigned j = 0; j < PER_LANE; j++) dv_acc[j] += a * dr[j];
    }
    if (dk.data) {
      float datt = 0.0f;
#pragma unroll
      for (unsigned j = 0; j < PER_LANE; j++) datt += dr[j] * vr[j];
      float dpre = a * (warp_sum_all(datt) - D[bht]);
      axpy_row(dk_acc, dpre, q, qrow, sh.hd);
    }
  }
  if (dk.data) store_warps_sum(dk_acc, partial_k, dk, kvrow, sh.hd, scale, 1);
  if (dv.data) store_warps_sum(dv_acc, partial_v, dv, kvrow, sh.hd, 1.0f, 1);
}

static float scale_of(int hd) { return 1.0f / sqrtf((float)hd); }

cudaError_t gpu_gqa_attention_forward(struct gpu_buf out, struct gpu_buf att, struct gpu_buf q, struct gpu_buf k,
                                      struct gpu_buf v, struct gpu_gqa_shape sh, cudaStream_t s) {
  unsigned blocks = (unsigned)((size_t)sh.B * sh.NH * sh.T);
  if (blocks == 0) return cudaSuccess;
  gqa_forward_kernel<<<blocks, ATT_THREADS, 0, s>>>(out, att, q, k, v, sh, scale_of(sh.hd));
  return cudaGetLastError();
}

size_t gpu_gqa_attention_backward_scratch(int B, int NH, int T) { return (size_t)B * NH * T * sizeof(float); }

cudaError_t gpu_gqa_attention_backward(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv, struct gpu_buf dout,
                                       struct gpu_buf q, struct gpu_buf k, struct gpu_buf v, struct gpu_buf att,
                                       void *scratch, struct gpu_gqa_shape sh, cudaStream_t s) {
  unsigned query_blocks = (unsigned)((size_t)sh.B * sh.NH * sh.T);
  unsigned key_blocks = (unsigned)((size_t)sh.B * sh.NKV * sh.T);
  if (query_blocks == 0) return cudaSuccess;
  float *D = (float *)scratch, scale = scale_of(sh.hd);
  if (dq.data || dk.data) {
    gqa_backward_query_kernel<<<query_blocks, ATT_THREADS, 0, s>>>(dq, D, dout, k, v, att, sh, scale);
    cudaError_t rc = cudaGetLastError();
    if (rc != cudaSuccess) return rc;
  }
  if (dk.data || dv.data)
    gqa_backward_key_kernel<<<key_blocks, ATT_THREADS, 0, s>>>(dk, dv, D, dout, q, v, att, sh, scale);
  return cudaGetLastError();
}
