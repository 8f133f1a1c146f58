/* Causal attention on the GPU, tiled as FlashAttention-2 computes it: the twin of
 * ../cpu/attention.c, the same algorithm, the same 64-wide tiles (so the running maximum
 * moves at the same keys) and the same rounding points; ../cpu/attention.c writes the
 * math out. A (T, T) matrix is never held: the forward keeps out and lse (B, NH, T),
 * the backward recomputes the probabilities from them tile by tile.
 *
 * In bf16 and fp16 at head dims 64 and 128 (the models'), on heads whose rows start on
 * 16 bytes, the forward and the backward run on tensor cores (flash_attention_tc.cu). Every other case (fp32, other head dims) runs
 * here, on CUDA cores: a block of 256 threads takes a 64-row tile; 4 neighbouring lanes
 * share a row (of queries, or of keys in the key pass), each holding every 4th column of
 * the row's 64 scores and every 4th element of its accumulator (up to FLASH_HD_MAX / 4
 * in registers), so a row's maximum and sum are two shuffles and the 4 lanes that write a
 * row of p read it back after a __syncwarp. Tiles sit in shared memory widened to fp32 (rows hd + 1
 * floats apart, so that the 4 lanes' rows fall in different banks); each product is an
 * fp32 loop on CUDA cores, with a 16-bit operand rounded to the dtype where the CPU
 * rounds it. The backward is two kernels, each gradient with one writer (no atomics, the
 * same bits on every run): a block per key tile sums dk and dv over the query heads
 * sharing its kv head and every query tile that sees it; a block per query tile sums dq.
 * Each recomputes p and ds: more arithmetic than FlashAttention-2's single pass with
 * atomic dq, for determinism. Rounding within fp32 sums is in another order than the
 * CPU's sgemms: the last bits differ. */
#include <math.h>

#include "elem.cuh"
#include "flash_tiles.cuh"
#include "reduce.cuh"

static const int THREADS = 256, LANES_PER_ROW = 4;
static const int PER_LANE = TILE / LANES_PER_ROW, ACC = FLASH_HD_MAX / LANES_PER_ROW;

/* The 4 lanes of a row: the sum and the maximum of their values, in each of them. */
static __device__ inline float row_sum(float x) {
  x += __shfl_xor_sync(FULL_MASK, x, 1);
  return x + __shfl_xor_sync(FULL_MASK, x, 2);
}
static __device__ inline float row_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(FULL_MASK, x, 1));
  return fmaxf(x, __shfl_xor_sync(FULL_MASK, x, 2));
}

/* rows rows of hd elements from src, the first at first and each stride after the one
 * before, widened into dst (rows ld apart); 0 past valid rows (valid may be <= 0). */
static __device__ void load_tile(float *dst, int ld, struct gpu_buf src, size_t first, int valid, size_t stride,
                                 int hd, int rows) {
  for (int i = threadIdx.x; i < rows * hd; i += blockDim.x) {
    int r = i / hd, e = i % hd;
    dst[r * ld + e] = r < valid ? elem_get(src, first + (size_t)r * stride + e) : 0.0f;
  }
}

static __device__ inline float dot(const float *a, const float *b, int hd) {
  float s = 0.0f;
  for (int e = 0; e < hd; e++) s += a[e] * b[e];
  return s;
}

/* Grid (query tiles, NH, B), the last query tile (which sees every key) first. Per key
 * tile: its scores `rows` keys at a time into registers, the online softmax over the whole
 * tile, then p v, `rows` keys at a time. Shared memory (cuda_attention_smem): q (a tile),
 * k and v (rows each), p (a tile's rows x rows). */
static __global__ void __launch_bounds__(THREADS)
    flash_forward_kernel(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                         struct gpu_attention_layout l, float scale, int rows) {
  extern __shared__ float smem[];
  int LD = l.hd + 1, PLD = rows + 1, os = l.NH * l.hd, parts = TILE / rows, lane_cols = rows / LANES_PER_ROW;
  float *qs = smem, *ks = qs + TILE * LD, *vs = ks + rows * LD, *ps = vs + rows * LD;
  int qi = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z, g = h / (l.NH / l.NKV);
  int row = threadIdx.x / LANES_PER_ROW, sub = threadIdx.x % LANES_PER_ROW;
  struct span qt = span_of(qi, l.T);
  size_t kva = head_at(l.T, l.kvs, l.hd, b, g);
  load_tile(qs, LD, q, head_at(l.T, l.qs, l.hd, b, h) + (size_t)qt.r0 * l.qs, qt.n, l.qs, l.hd, TILE);
  float m = -INFINITY, lsum = 0.0f, acc[ACC] = {};
  for (int kj = 0; kj <= qi; kj++) {
    struct span kt = span_of(kj, l.T);
    /* s[j]: the score of the tile's key column sub + 4 j, then its probability; part p of
     * the tile holds the lane's j from p lane_cols on. */
    float s[PER_LANE], mx = m;
    for (int part = 0; part < parts; part++) {
      int c0 = part * rows, j0 = part * lane_cols;
      size_t at = kva + (size_t)(kt.r0 + c0) * l.kvs;
      __syncthreads(); /* the previous readers of ks (and vs) are done */
      load_tile(ks, LD, k, at, kt.n - c0, l.kvs, l.hd, rows);
      if (parts == 1) load_tile(vs, LD, v, at, kt.n - c0, l.kvs, l.hd, rows);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < PER_LANE; j++) {
        if (j < j0 || j >= j0 + lane_cols) continue;
        int c = sub + LANES_PER_ROW * j;
        float x = c < kt.n && kt.r0 + c <= qt.r0 + row ? dot(qs + row * LD, ks + (c - c0) * LD, l.hd) * scale
                                                      : -INFINITY;
        s[j] = x;
        mx = fmaxf(mx, x);
      }
    }
    mx = row_max(mx);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < PER_LANE; j++) {
      float p = expf(s[j] - mx);
      sum += p;
      s[j] = p;
    }
    float rescale = expf(m - mx);
    lsum = lsum * rescale + row_sum(sum);
    m = mx;
    for (int part = 0; part < parts; part++) {
      int c0 = part * rows, j0 = part * lane_cols;
      if (parts > 1) __syncthreads(); /* the previous readers of vs and ps are done */
#pragma unroll
      for (int j = 0; j < PER_LANE; j++)
        if (j >= j0 && j < j0 + lane_cols) ps[row * PLD + sub + LANES_PER_ROW * j - c0] = rounded(out.dtype, s[j]);
      if (parts > 1) {
        load_tile(vs, LD, v, kva + (size_t)(kt.r0 + c0) * l.kvs, kt.n - c0, l.kvs, l.hd, rows);
        __syncthreads();
      } else {
        __syncwarp(); /* a row's 4 lanes read the p its lanes wrote */
      }
      int n = kt.n - c0 < rows ? kt.n - c0 : rows;
#pragma unroll
      for (int i = 0; i < ACC; i++) {
        int e = sub + LANES_PER_ROW * i;
        if (e >= l.hd) break;
        float a = part == 0 ? acc[i] * rescale : acc[i];
        for (int c = 0; c < n; c++) a += ps[row * PLD + c] * vs[c * LD + e];
        acc[i] = a;
      }
    }
  }
  if (row >= qt.n) return;
  size_t oa = head_at(l.T, os, l.hd, b, h) + (size_t)(qt.r0 + row) * os;
  float inv = 1.0f / lsum;
#pragma unroll
  for (int i = 0; i < ACC; i++) {
    int e = sub + LANES_PER_ROW * i;
    if (e < l.hd) elem_set(out, oa + e, acc[i] * inv);
  }
  if (sub == 0) lse[((size_t)b * l.NH + h) * l.T + qt.r0 + row] = m + logf(lsum);
}

/* A query row's D = dout . out over its n elements (0 for a row past T), in the row's 4
 * lanes; every lane of the warp calls it (the shuffles). */
static __device__ float row_D(struct gpu_buf dout, struct gpu_buf out, size_t at, int n, int sub) {
  float d = 0.0f;
  for (int e = sub; e < n; e += LANES_PER_ROW) d += elem_get(dout, at + e) * elem_get(out, at + e);
  return row_sum(d);
}

/* p = exp(s - lse) of query row qr and key row kc (in shared memory), unrounded. */
static __device__ inline float probability(const float *qr, const float *kc, float lse_r, int hd, float scale) {
  return expf(dot(qr, kc, hd) * scale - lse_r);
}

/* Grid (key tiles, NKV, B). The query rows that see the block's keys, `rows` at a time: of
 * each query head of the kv head, each query tile from the key tile's on. Shared memory
 * (cuda_attention_smem): k, v (a tile each), q, dout (rows each), p, ds (rows x a tile),
 * lse, D (rows each). */
static __global__ void __launch_bounds__(THREADS, 2)
    flash_backward_kv_kernel(struct gpu_buf dk, struct gpu_buf dv, struct gpu_buf dout, struct gpu_buf q,
                             struct gpu_buf k, struct gpu_buf v, struct gpu_buf out, const float *lse,
                             struct gpu_attention_layout l, float scale, int accumulate, int rows) {
  extern __shared__ float smem[];
  int LD = l.hd + 1, PLD = TILE + 1, os = l.NH * l.hd, group = l.NH / l.NKV, nt = (l.T + TILE - 1) / TILE;
  int parts = TILE / rows, lane_rows = rows / LANES_PER_ROW;
  float *ks = smem, *vs = ks + TILE * LD, *qs = vs + TILE * LD, *dos = qs + rows * LD, *ps = dos + rows * LD;
  float *dss = ps + rows * PLD, *lse_s = dss + rows * PLD, *D_s = lse_s + rows;
  int kj = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  int c = threadIdx.x / LANES_PER_ROW, sub = threadIdx.x % LANES_PER_ROW;
  enum dtype d = dout.dtype;
  struct span kt = span_of(kj, l.T);
  size_t kva = head_at(l.T, l.kvs, l.hd, b, g) + (size_t)kt.r0 * l.kvs;
  load_tile(ks, LD, k, kva, kt.n, l.kvs, l.hd, TILE);
  load_tile(vs, LD, v, kva, kt.n, l.kvs, l.hd, TILE);
  float dk_acc[ACC] = {}, dv_acc[ACC] = {};
  for (int h = g * group; h < (g + 1) * group; h++) {
    for (int qi = kj; qi < nt; qi++) {
      struct span qt = span_of(qi, l.T);
      for (int part = 0; part < parts; part++) {
        int q0 = qt.r0 + part * rows, qn = qt.n - part * rows; /* the same in every thread */
        if (qn <= 0) break;
        if (qn > rows) qn = rows;
        size_t qa = head_at(l.T, l.qs, l.hd, b, h) + (size_t)q0 * l.qs;
        size_t oa = head_at(l.T, os, l.hd, b, h) + (size_t)q0 * os;
        __syncthreads(); /* the previous rows' readers are done */
        load_tile(qs, LD, q, qa, qn, l.qs, l.hd, rows);
        load_tile(dos, LD, dout, oa, qn, os, l.hd, rows);
        int r = threadIdx.x / LANES_PER_ROW;
        float D = row_D(dout, out, oa + (size_t)r * os, r < qn ? l.hd : 0, sub);
        if (sub == 0 && r < rows) {
          D_s[r] = D;
          lse_s[r] = r < qn ? lse[((size_t)b * l.NH + h) * l.T + q0 + r] : INFINITY;
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < PER_LANE; j++) {
          if (j >= lane_rows) break;
          int rr = sub + LANES_PER_ROW * j;
          float p = 0.0f, ds = 0.0f;
          if (rr < qn && c < kt.n && kt.r0 + c <= q0 + rr) {
            p = probability(qs + rr * LD, ks + c * LD, lse_s[rr], l.hd, scale);
            ds = rounded(d, p * (dot(dos + rr * LD, vs + c * LD, l.hd) - D_s[rr]));
          }
          ps[rr * PLD + c] = rounded(d, p);
          dss[rr * PLD + c] = ds;
        }
        __syncwarp(); /* a key row's 4 lanes read the p and ds its lanes wrote */
#pragma unroll
        for (int i = 0; i < ACC; i++) {
          int e = sub + LANES_PER_ROW * i;
          if (e >= l.hd) break;
          float a = dv_acc[i], bk = dk_acc[i];
          for (int rr = 0; rr < qn; rr++) {
            a += ps[rr * PLD + c] * dos[rr * LD + e];
            bk += dss[rr * PLD + c] * qs[rr * LD + e];
          }
          dv_acc[i] = a, dk_acc[i] = bk;
        }
      }
    }
  }
  if (c >= kt.n) return;
#pragma unroll
  for (int i = 0; i < ACC; i++) {
    int e = sub + LANES_PER_ROW * i;
    if (e >= l.hd) break;
    size_t at = kva + (size_t)c * l.kvs + e;
    if (dk.data) elem_put(dk, at, dk_acc[i] * scale, accumulate);
    if (dv.data) elem_put(dv, at, dv_acc[i], accumulate);
  }
}

/* Grid (query tiles, NH, B), the last query tile first. The keys the block's queries see,
 * `rows` at a time. Shared memory (cuda_attention_smem): k, v (rows each), q, dout (a tile
 * each), ds (a tile's rows x rows). */
static __global__ void __launch_bounds__(THREADS)
    flash_backward_q_kernel(struct gpu_buf dq, struct gpu_buf dout, struct gpu_buf q, struct gpu_buf k,
                            struct gpu_buf v, struct gpu_buf out, const float *lse, struct gpu_attention_layout l,
                            float scale, int accumulate, int rows) {
  extern __shared__ float smem[];
  int LD = l.hd + 1, PLD = rows + 1, os = l.NH * l.hd, parts = TILE / rows, lane_cols = rows / LANES_PER_ROW;
  float *ks = smem, *vs = ks + rows * LD, *qs = vs + rows * LD, *dos = qs + TILE * LD, *dss = dos + TILE * LD;
  int qi = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z, g = h / (l.NH / l.NKV);
  int r = threadIdx.x / LANES_PER_ROW, sub = threadIdx.x % LANES_PER_ROW;
  enum dtype d = dout.dtype;
  struct span qt = span_of(qi, l.T);
  size_t qa = head_at(l.T, l.qs, l.hd, b, h) + (size_t)qt.r0 * l.qs;
  size_t oa = head_at(l.T, os, l.hd, b, h) + (size_t)qt.r0 * os, kva = head_at(l.T, l.kvs, l.hd, b, g);
  load_tile(qs, LD, q, qa, qt.n, l.qs, l.hd, TILE);
  load_tile(dos, LD, dout, oa, qt.n, os, l.hd, TILE);
  float D = row_D(dout, out, oa + (size_t)r * os, r < qt.n ? l.hd : 0, sub);
  float lse_r = r < qt.n ? lse[((size_t)b * l.NH + h) * l.T + qt.r0 + r] : INFINITY;
  float dq_acc[ACC] = {};
  for (int kj = 0; kj <= qi; kj++) {
    struct span kt = span_of(kj, l.T);
    for (int part = 0; part < parts; part++) {
      int k0 = kt.r0 + part * rows, kn = kt.n - part * rows; /* the same in every thread */
      if (kn <= 0) break;
      if (kn > rows) kn = rows;
      __syncthreads(); /* the previous keys' readers are done */
      load_tile(ks, LD, k, kva + (size_t)k0 * l.kvs, kn, l.kvs, l.hd, rows);
      load_tile(vs, LD, v, kva + (size_t)k0 * l.kvs, kn, l.kvs, l.hd, rows);
      __syncthreads();
#pragma unroll
      for (int j = 0; j < PER_LANE; j++) {
        if (j >= lane_cols) break;
        int c = sub + LANES_PER_ROW * j;
        float ds = 0.0f;
        if (r < qt.n && c < kn && k0 + c <= qt.r0 + r) {
          float p = probability(qs + r * LD, ks + c * LD, lse_r, l.hd, scale);
          ds = rounded(d, p * (dot(dos + r * LD, vs + c * LD, l.hd) - D));
        }
        dss[r * PLD + c] = ds;
      }
      __syncwarp(); /* a query row's 4 lanes read the ds its lanes wrote */
#pragma unroll
      for (int i = 0; i < ACC; i++) {
        int e = sub + LANES_PER_ROW * i;
        if (e >= l.hd) break;
        float a = dq_acc[i];
        for (int c = 0; c < kn; c++) a += dss[r * PLD + c] * ks[c * LD + e];
        dq_acc[i] = a;
      }
    }
  }
  if (r >= qt.n) return;
#pragma unroll
  for (int i = 0; i < ACC; i++) {
    int e = sub + LANES_PER_ROW * i;
    if (e < l.hd) elem_put(dq, qa + (size_t)r * l.qs + e, dq_acc[i] * scale, accumulate);
  }
}

/* A kernel of 256 threads with bytes of dynamic shared memory (asked for past 48 KiB). */
template <typename Kernel, typename... Args>
static cudaError_t launch(Kernel kernel, dim3 grid, size_t bytes, cudaStream_t s, Args... args) {
  cudaError_t rc = allow_smem(kernel, bytes);
  if (rc != cudaSuccess) return rc;
  kernel<<<grid, THREADS, bytes, s>>>(args...);
  return cudaGetLastError();
}

/* The tiling cuda_attention_tiling chooses for kernel k on a device whose blocks may have
 * smem_limit bytes; cudaErrorInvalidConfiguration where none fits (attention.c has refused
 * such a head dim before). */
static cudaError_t tiling(enum cuda_attention_kernel k, int hd, size_t smem_limit, struct cuda_attention_tiling *t) {
  *t = cuda_attention_tiling(k, 0, hd, smem_limit);
  return t->rows ? cudaSuccess : cudaErrorInvalidConfiguration;
}

static cudaError_t forward(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                           struct gpu_attention_layout l, size_t smem_limit, cudaStream_t s) {
  struct cuda_attention_tiling t;
  cudaError_t rc = tiling(CUDA_ATTENTION_FORWARD, l.hd, smem_limit, &t);
  if (rc != cudaSuccess) return rc;
  return launch(flash_forward_kernel, grid_of(l, l.NH), t.smem, s, out, lse, q, k, v, l, 1.0f / sqrtf((float)l.hd),
                t.rows);
}

extern "C" cudaError_t gpu_flash_attention_forward(struct gpu_buf out, float *lse, struct gpu_buf q,
                                                   struct gpu_buf k, struct gpu_buf v,
                                                   struct gpu_attention_layout l, size_t smem_limit,
                                                   cudaStream_t s) {
  if (l.B == 0 || l.T == 0) return cudaSuccess;
  const struct gpu_buf tensors[] = {out, q, k, v};
  if (flash_tc_takes(out.dtype, l, tensors)) return flash_tc_forward(out, lse, q, k, v, l, smem_limit, s);
  return forward(out, lse, q, k, v, l, smem_limit, s);
}

extern "C" cudaError_t gpu_flash_attention_backward(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv,
                                                    int accumulate, struct gpu_buf dout, struct gpu_buf q,
                                                    struct gpu_buf k, struct gpu_buf v, struct gpu_buf out,
                                                    const float *lse, struct gpu_attention_layout l,
                                                    size_t smem_limit, cudaStream_t s) {
  if (l.B == 0 || l.T == 0) return cudaSuccess;
  const struct gpu_buf tensors[] = {dq, dk, dv, dout, q, k, v, out};
  if (flash_tc_takes(dout.dtype, l, tensors))
    return flash_tc_backward(dq, dk, dv, accumulate, dout, q, k, v, out, lse, l, smem_limit, s);
  float scale = 1.0f / sqrtf((float)l.hd);
  struct cuda_attention_tiling t;
  cudaError_t rc;
  if (dk.data || dv.data) {
    if ((rc = tiling(CUDA_ATTENTION_BACKWARD_KV, l.hd, smem_limit, &t)) != cudaSuccess) return rc;
    rc = launch(flash_backward_kv_kernel, grid_of(l, l.NKV), t.smem, s, dk, dv, dout, q, k, v, out, lse, l, scale,
                accumulate, t.rows);
    if (rc != cudaSuccess) return rc;
  }
  if (!dq.data) return cudaSuccess;
  if ((rc = tiling(CUDA_ATTENTION_BACKWARD_Q, l.hd, smem_limit, &t)) != cudaSuccess) return rc;
  return launch(flash_backward_q_kernel, grid_of(l, l.NH), t.smem, s, dq, dout, q, k, v, out, lse, l, scale,
                accumulate, t.rows);
}
