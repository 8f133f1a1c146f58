/* The tiled attention on tensor cores, bf16 and fp16 at head dims 64 and 128: the same
 * algorithm, tiles and rounding points as flash_attention.cu's CUDA-core kernels (which
 * ../cpu/attention.c writes out), its products on wmma's 16 x 16 x 16 (16-bit in, fp32
 * accumulators). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <mma.h>

#include "elem.cuh"
#include "flash_tiles.cuh"
#include "reduce.cuh"

/* ---- The forward ----
 * A block of 4 warps takes a 64-row query tile, each warp 16 of its rows. Per key tile a
 * warp computes its 16 x 64 scores into shared memory, runs the online softmax on them (2
 * lanes a row, 32 columns each), writes p rounded to the dtype (the products' operand
 * type) and rescales its rows of acc, then adds p v on the tensor cores into acc (fp32,
 * in shared memory). The q, k and v tiles are the tensors' own
 * 16-bit values, copied. */

static const int TC_WARPS = 4, TC_THREADS = TC_WARPS * 32, TC_ROWS = TILE / TC_WARPS;
/* Padding that keeps wmma's leading dimensions multiples of 16 bytes and spreads rows
 * over the banks. */
static const int PAD16 = 8, PAD32 = 4;

template <typename T>
struct tc_layout {
  int ld, sld, pld, old;
  T *q, *k, *v, *p;
  float *s, *acc;
};

template <typename T>
static __host__ __device__ size_t tc_smem(int hd) {
  size_t ld = hd + PAD16, sld = TILE + PAD32, pld = TILE + PAD16, old = hd + PAD32;
  return 3 * TILE * ld * sizeof(T) + TILE * pld * sizeof(T) + TILE * (sld + old) * sizeof(float);
}

template <typename T>
static __device__ struct tc_layout<T> tc_layout_of(void *smem, int hd) {
  struct tc_layout<T> t;
  t.ld = hd + PAD16, t.sld = TILE + PAD32, t.pld = TILE + PAD16, t.old = hd + PAD32;
  t.q = (T *)smem, t.k = t.q + TILE * t.ld, t.v = t.k + TILE * t.ld, t.p = t.v + TILE * t.ld;
  t.s = (float *)(t.p + TILE * t.pld), t.acc = t.s + TILE * t.sld;
  return t;
}

/* valid rows of hd 16-bit elements from src (first at first, each stride after the one
 * before) into dst (rows ld apart) as they are; 0 past valid rows. */
template <typename T>
static __device__ void copy_tile(T *dst, int ld, struct gpu_buf src, size_t first, int valid, size_t stride, int hd) {
  const uint16_t *from = (const uint16_t *)src.data;
  uint16_t *to = (uint16_t *)dst;
  for (int i = threadIdx.x; i < TILE * hd; i += blockDim.x) {
    int r = i / hd, e = i % hd;
    to[r * ld + e] = r < valid ? from[first + (size_t)r * stride + e] : (uint16_t)0;
  }
}

/* c (16 x cols, fp32, rows ldc apart) (+)= a (16 x depth, rows lda apart) b, b (depth x
 * cols) row-major (rows ldb apart) or, b_t, its transpose given row-major (cols x depth). */
template <typename T, typename BLayout>
static __device__ void warp_product(float *c, int ldc, int cols, const T *a, int lda, const T *b, int ldb, int depth,
                                    int accumulate, int b_t) {
  using namespace nvcuda;
  for (int n = 0; n < cols; n += 16) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    if (accumulate)
      wmma::load_matrix_sync(acc, c + n, ldc, wmma::mem_row_major);
    else
      wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < depth; k += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, BLayout> fb;
      wmma::load_matrix_sync(fa, a + k, lda);
      wmma::load_matrix_sync(fb, b_t ? b + (size_t)n * ldb + k : b + (size_t)k * ldb + n, ldb);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(c + n, acc, ldc, wmma::mem_row_major);
  }
}

/* Grid (query tiles, NH, B), the last query tile first. */
template <typename T>
static __global__ void __launch_bounds__(TC_THREADS)
    flash_forward_tc_kernel(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                            struct gpu_attention_layout l, float scale) {
  extern __shared__ __align__(128) float smem[]; /* wmma: 32-byte aligned fragments */
  struct tc_layout<T> t = tc_layout_of<T>(smem, l.hd);
  int os = l.NH * l.hd, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int qi = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z, g = h / (l.NH / l.NKV);
  struct span qt = span_of(qi, l.T);
  size_t kva = head_at(l.T, l.kvs, l.hd, b, g);
  copy_tile(t.q, t.ld, q, head_at(l.T, l.qs, l.hd, b, h) + (size_t)qt.r0 * l.qs, qt.n, l.qs, l.hd);
  /* This warp's rows; lane's row (of them) and half of the 64 columns. */
  int w0 = warp * TC_ROWS, row = lane / 2, half = lane % 2;
  float *s = t.s + w0 * t.sld, *acc = t.acc + w0 * t.old;
  T *p = t.p + w0 * t.pld;
  for (int e = half; e < l.hd; e += 2) acc[row * t.old + e] = 0.0f;
  float m = -INFINITY, lsum = 0.0f;
  for (int kj = 0; kj <= qi; kj++) {
    struct span kt = span_of(kj, l.T);
    __syncthreads(); /* the previous tile's readers are done */
    copy_tile(t.k, t.ld, k, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs, l.hd);
    copy_tile(t.v, t.ld, v, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs, l.hd);
    __syncthreads();
    warp_product<T, nvcuda::wmma::col_major>(s, t.sld, TILE, t.q + w0 * t.ld, t.ld, t.k, t.ld, l.hd, 0, 1);
    __syncwarp();
    float *srow = s + row * t.sld, mx = m;
    int query = qt.r0 + w0 + row;
    for (int c = half * 32; c < half * 32 + 32; c++) {
      float x = c < kt.n && kt.r0 + c <= query ? srow[c] * scale : -INFINITY;
      srow[c] = x;
      mx = fmaxf(mx, x);
    }
    mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, 1));
    float sum = 0.0f;
    for (int c = half * 32; c < half * 32 + 32; c++) {
      float x = expf(srow[c] - mx);
      sum += x;
      p[row * t.pld + c] = (T)rounded(out.dtype, x);
    }
    sum += __shfl_xor_sync(FULL_MASK, sum, 1);
    float rescale = expf(m - mx);
    lsum = lsum * rescale + sum;
    m = mx;
    for (int e = half; e < l.hd; e += 2) acc[row * t.old + e] *= rescale;
    __syncwarp();
    warp_product<T, nvcuda::wmma::row_major>(acc, t.old, l.hd, p, t.pld, t.v, t.ld, TILE, 1, 0);
    __syncwarp();
  }
  int r = w0 + row;
  if (r >= qt.n) return;
  size_t oa = head_at(l.T, os, l.hd, b, h) + (size_t)(qt.r0 + r) * os;
  float inv = 1.0f / lsum;
  for (int e = half; e < l.hd; e += 2) elem_set(out, oa + e, acc[row * t.old + e] * inv);
  if (half == 0) lse[((size_t)b * l.NH + h) * l.T + qt.r0 + r] = m + logf(lsum);
}

/* ---- The backward on tensor cores: the same two passes ----
 * A warp owns 16 rows of the block's tile (keys in the key pass, queries in the dq
 * pass) and runs that tile's products for them on wmma: the scores and dp (or their
 * transposes, in the key pass) into shared memory, p and ds per element (2 lanes a
 * row), then the gradient products into its fp32 sums in shared memory. */

template <typename T>
struct tc_back {
  int ld, sld, pld, old;
  T *k, *v, *q, *dout, *p, *ds;
  float *s, *dp, *sum1, *sum2, *lse, *D;
};

template <typename T>
static size_t tc_back_smem(int hd) {
  size_t ld = hd + PAD16, sld = TILE + PAD32, pld = TILE + PAD16, old = hd + PAD32;
  return TILE * ((4 * ld + 2 * pld) * sizeof(T) + (2 * sld + 2 * old + 2) * sizeof(float));
}

template <typename T>
static __device__ struct tc_back<T> tc_back_of(void *smem, int hd) {
  struct tc_back<T> t;
  t.ld = hd + PAD16, t.sld = TILE + PAD32, t.pld = TILE + PAD16, t.old = hd + PAD32;
  t.k = (T *)smem, t.v = t.k + TILE * t.ld, t.q = t.v + TILE * t.ld, t.dout = t.q + TILE * t.ld;
  t.p = t.dout + TILE * t.ld, t.ds = t.p + TILE * t.pld;
  t.s = (float *)(t.ds + TILE * t.pld), t.dp = t.s + TILE * t.sld, t.sum1 = t.dp + TILE * t.sld;
  t.sum2 = t.sum1 + TILE * t.old, t.lse = t.sum2 + TILE * t.old, t.D = t.lse + TILE;
  return t;
}

/* The query tile qt of head h (its rows of out and dout from element oa on): each row's
 * lse (+inf past T: p = 0 there) and D = dout . out, 2 threads a row. */
template <typename T>
static __device__ void tc_rows_in(const struct tc_back<T> &t, struct gpu_buf dout, struct gpu_buf out,
                                  const float *lse, size_t lse_at, size_t oa, int os, int hd, struct span qt) {
  int r = threadIdx.x / 2, hf = threadIdx.x % 2;
  float d = 0.0f;
  size_t at = oa + (size_t)r * os;
  if (r < qt.n)
    for (int e = hf; e < hd; e += 2) d += elem_get(dout, at + e) * elem_get(out, at + e);
  d += __shfl_xor_sync(FULL_MASK, d, 1);
  if (hf == 0) {
    t.D[r] = d;
    t.lse[r] = r < qt.n ? lse[lse_at + r] : INFINITY;
  }
}

/* Grid (key tiles, NKV, B). */
template <typename T>
static __global__ void __launch_bounds__(TC_THREADS)
    flash_backward_kv_tc_kernel(struct gpu_buf dk, struct gpu_buf dv, struct gpu_buf dout, struct gpu_buf q,
                                struct gpu_buf k, struct gpu_buf v, struct gpu_buf out, const float *lse,
                                struct gpu_attention_layout l, float scale) {
  using nvcuda::wmma::col_major;
  using nvcuda::wmma::row_major;
  extern __shared__ __align__(128) float smem[];
  struct tc_back<T> t = tc_back_of<T>(smem, l.hd);
  int os = l.NH * l.hd, group = l.NH / l.NKV, nt = (l.T + TILE - 1) / TILE, warp = threadIdx.x / 32;
  int kj = blockIdx.x, g = blockIdx.y, b = blockIdx.z, w0 = warp * TC_ROWS, row = (threadIdx.x % 32) / 2;
  int half = threadIdx.x % 2;
  enum dtype d = dout.dtype;
  struct span kt = span_of(kj, l.T);
  size_t kva = head_at(l.T, l.kvs, l.hd, b, g) + (size_t)kt.r0 * l.kvs;
  copy_tile(t.k, t.ld, k, kva, kt.n, l.kvs, l.hd);
  copy_tile(t.v, t.ld, v, kva, kt.n, l.kvs, l.hd);
  float *s = t.s + w0 * t.sld, *dp = t.dp + w0 * t.sld, *dk_sum = t.sum1 + w0 * t.old, *dv_sum = t.sum2 + w0 * t.old;
  T *pt = t.p + w0 * t.pld, *dst = t.ds + w0 * t.pld;
  for (int e = half; e < l.hd; e += 2) dk_sum[row * t.old + e] = 0.0f, dv_sum[row * t.old + e] = 0.0f;
  int key = kt.r0 + w0 + row;
  for (int h = g * group; h < (g + 1) * group; h++) {
    for (int qi = kj; qi < nt; qi++) {
      struct span qt = span_of(qi, l.T);
      size_t oa = head_at(l.T, os, l.hd, b, h) + (size_t)qt.r0 * os;
      __syncthreads();
      copy_tile(t.q, t.ld, q, head_at(l.T, l.qs, l.hd, b, h) + (size_t)qt.r0 * l.qs, qt.n, l.qs, l.hd);
      copy_tile(t.dout, t.ld, dout, oa, qt.n, os, l.hd);
      tc_rows_in(t, dout, out, lse, ((size_t)b * l.NH + h) * l.T + qt.r0, oa, os, l.hd, qt);
      __syncthreads();
      /* Transposed: rows are this warp's keys, columns the tile's queries. */
      warp_product<T, col_major>(s, t.sld, TILE, t.k + w0 * t.ld, t.ld, t.q, t.ld, l.hd, 0, 1);
      warp_product<T, col_major>(dp, t.sld, TILE, t.v + w0 * t.ld, t.ld, t.dout, t.ld, l.hd, 0, 1);
      __syncwarp();
      for (int c = half * 32; c < half * 32 + 32; c++) {
        float pv = 0.0f, ds = 0.0f;
        if (w0 + row < kt.n && c < qt.n && key <= qt.r0 + c) {
          pv = expf(s[row * t.sld + c] * scale - t.lse[c]);
          ds = rounded(d, pv * (dp[row * t.sld + c] - t.D[c]));
        }
        pt[row * t.pld + c] = (T)rounded(d, pv);
        dst[row * t.pld + c] = (T)ds;
      }
      __syncwarp();
      warp_product<T, row_major>(dv_sum, t.old, l.hd, pt, t.pld, t.dout, t.ld, TILE, 1, 0);
      warp_product<T, row_major>(dk_sum, t.old, l.hd, dst, t.pld, t.q, t.ld, TILE, 1, 0);
      __syncwarp();
    }
  }
  if (w0 + row >= kt.n) return;
  for (int e = half; e < l.hd; e += 2) {
    size_t at = kva + (size_t)(w0 + row) * l.kvs + e;
    if (dk.data) elem_add(dk, at, dk_sum[row * t.old + e] * scale);
    if (dv.data) elem_add(dv, at, dv_sum[row * t.old + e]);
  }
}

/* Grid (query tiles, NH, B), the last query tile first. */
template <typename T>
static __global__ void __launch_bounds__(TC_THREADS)
    flash_backward_q_tc_kernel(struct gpu_buf dq, struct gpu_buf dout, struct gpu_buf q, struct gpu_buf k,
                               struct gpu_buf v, struct gpu_buf out, const float *lse, struct gpu_attention_layout l,
                               float scale) {
  using nvcuda::wmma::col_major;
  using nvcuda::wmma::row_major;
  extern __shared__ __align__(128) float smem[];
  struct tc_back<T> t = tc_back_of<T>(smem, l.hd);
  int os = l.NH * l.hd, warp = threadIdx.x / 32, w0 = warp * TC_ROWS, row = (threadIdx.x % 32) / 2;
  int half = threadIdx.x % 2;
  int qi = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z, g = h / (l.NH / l.NKV);
  enum dtype d = dout.dtype;
  struct span qt = span_of(qi, l.T);
  size_t qa = head_at(l.T, l.qs, l.hd, b, h) + (size_t)qt.r0 * l.qs;
  size_t oa = head_at(l.T, os, l.hd, b, h) + (size_t)qt.r0 * os, kva = head_at(l.T, l.kvs, l.hd, b, g);
  copy_tile(t.q, t.ld, q, qa, qt.n, l.qs, l.hd);
  copy_tile(t.dout, t.ld, dout, oa, qt.n, os, l.hd);
  tc_rows_in(t, dout, out, lse, ((size_t)b * l.NH + h) * l.T + qt.r0, oa, os, l.hd, qt);
  float *s = t.s + w0 * t.sld, *dp = t.dp + w0 * t.sld, *dq_sum = t.sum1 + w0 * t.old;
  T *dst = t.ds + w0 * t.pld;
  for (int e = half; e < l.hd; e += 2) dq_sum[row * t.old + e] = 0.0f;
  int r = w0 + row;
  for (int kj = 0; kj <= qi; kj++) {
    struct span kt = span_of(kj, l.T);
    __syncthreads();
    copy_tile(t.k, t.ld, k, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs, l.hd);
    copy_tile(t.v, t.ld, v, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs, l.hd);
    __syncthreads();
    warp_product<T, col_major>(s, t.sld, TILE, t.q + w0 * t.ld, t.ld, t.k, t.ld, l.hd, 0, 1);
    warp_product<T, col_major>(dp, t.sld, TILE, t.dout + w0 * t.ld, t.ld, t.v, t.ld, l.hd, 0, 1);
    __syncwarp();
    for (int c = half * 32; c < half * 32 + 32; c++) {
      float ds = 0.0f;
      if (r < qt.n && c < kt.n && kt.r0 + c <= qt.r0 + r) {
        float pv = expf(s[row * t.sld + c] * scale - t.lse[r]);
        ds = rounded(d, pv * (dp[row * t.sld + c] - t.D[r]));
      }
      dst[row * t.pld + c] = (T)ds;
    }
    __syncwarp();
    warp_product<T, row_major>(dq_sum, t.old, l.hd, dst, t.pld, t.k, t.ld, TILE, 1, 0);
    __syncwarp();
  }
  if (r >= qt.n) return;
  for (int e = half; e < l.hd; e += 2) elem_add(dq, qa + (size_t)r * l.qs + e, dq_sum[row * t.old + e] * scale);
}

template <typename T>
static cudaError_t forward_tc(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                              struct gpu_attention_layout l, cudaStream_t s) {
  size_t bytes = tc_smem<T>(l.hd);
  cudaError_t rc = allow_smem(flash_forward_tc_kernel<T>, bytes);
  if (rc != cudaSuccess) return rc;
  flash_forward_tc_kernel<T><<<grid_of(l, l.NH), TC_THREADS, bytes, s>>>(out, lse, q, k, v, l,
                                                                          1.0f / sqrtf((float)l.hd));
  return cudaGetLastError();
}

template <typename T>
static cudaError_t backward_tc(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv, struct gpu_buf dout,
                               struct gpu_buf q, struct gpu_buf k, struct gpu_buf v, struct gpu_buf out,
                               const float *lse, struct gpu_attention_layout l, cudaStream_t s) {
  size_t bytes = tc_back_smem<T>(l.hd);
  float scale = 1.0f / sqrtf((float)l.hd);
  cudaError_t rc;
  if (dk.data || dv.data) {
    if ((rc = allow_smem(flash_backward_kv_tc_kernel<T>, bytes)) != cudaSuccess) return rc;
    flash_backward_kv_tc_kernel<T>
        <<<grid_of(l, l.NKV), TC_THREADS, bytes, s>>>(dk, dv, dout, q, k, v, out, lse, l, scale);
    if ((rc = cudaGetLastError()) != cudaSuccess) return rc;
  }
  if (dq.data) {
    if ((rc = allow_smem(flash_backward_q_tc_kernel<T>, bytes)) != cudaSuccess) return rc;
    flash_backward_q_tc_kernel<T><<<grid_of(l, l.NH), TC_THREADS, bytes, s>>>(dq, dout, q, k, v, out, lse, l, scale);
  }
  return cudaGetLastError();
}

cudaError_t flash_tc_forward(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                             struct gpu_attention_layout l, cudaStream_t s) {
  return out.dtype == DTYPE_BF16 ? forward_tc<__nv_bfloat16>(out, lse, q, k, v, l, s)
                                 : forward_tc<__half>(out, lse, q, k, v, l, s);
}

cudaError_t flash_tc_backward(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv, struct gpu_buf dout,
                              struct gpu_buf q, struct gpu_buf k, struct gpu_buf v, struct gpu_buf out,
                              const float *lse, struct gpu_attention_layout l, cudaStream_t s) {
  return dout.dtype == DTYPE_BF16 ? backward_tc<__nv_bfloat16>(dq, dk, dv, dout, q, k, v, out, lse, l, s)
                                  : backward_tc<__half>(dq, dk, dv, dout, q, k, v, out, lse, l, s);
}
