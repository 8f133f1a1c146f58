/* The tiled attention on tensor cores, bf16 and fp16 at head dims 64 and 128: the same
 * algorithm, tiles and rounding points as flash_attention.cu's CUDA-core kernels (which
 * ../cpu/attention.c writes out), laid out as FlashAttention-2 lays it out.
 *
 * A block of 4 warps takes a 64-row tile (queries in the forward and the dq pass, keys in
 * the key pass), each warp 16 of its rows. Tiles come into shared memory as the tensors'
 * own 16-bit values, 16 bytes a load, rows hd + 8 elements apart: each of the products'
 * fragment loads then falls in 32 different banks. The products are mma.sync m16n8k16
 * (16-bit in, fp32 sums) whose sums stay in registers: a warp's scores, softmax,
 * probabilities and gradients of the scores never leave its registers, as a sum tile's
 * layout is, two n8 tiles side by side, the layout of the next product's a operand
 * (PTX ISA, "Matrix Fragments for mma.m16n8k16"). Lane l holds rows l/4 and l/4 + 8,
 * columns 2(l%4) and 2(l%4) + 1 of each n8 tile; a row's maximum and sum are two
 * shuffles among its 4 lanes.
 *
 * Rounding, as the CPU: p is rounded to the dtype as a product's operand and summed
 * unrounded into the row's sum; ds = p (dp - D) is rounded once; out, dq, dk and dv are
 * their fp32 sums rounded once on store (added to what the gradients held). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "flash_tiles.cuh"
#include "reduce.cuh"

static const int TC_WARPS = 4, TC_THREADS = TC_WARPS * 32, WARP_ROWS = TILE / TC_WARPS;

template <typename T>
struct tc_dtype;
template <>
struct tc_dtype<__nv_bfloat16> {
  static constexpr enum dtype value = DTYPE_BF16;
};
template <>
struct tc_dtype<__half> {
  static constexpr enum dtype value = DTYPE_F16;
};

/* Two values rounded to T, the first in the low half: an operand register. */
template <typename T>
static __device__ inline uint32_t pack2(float lo, float hi) {
  return (uint32_t)narrow(tc_dtype<T>::value, lo) | (uint32_t)narrow(tc_dtype<T>::value, hi) << 16;
}

template <typename T>
static __device__ inline float2 unpack2(uint32_t x) {
  return make_float2(widen(tc_dtype<T>::value, (uint16_t)(x & 0xffffu)), widen(tc_dtype<T>::value, (uint16_t)(x >> 16)));
}

/* d += a b on one m16n8k16 tile: a (16 x 16) in 4 registers, b (16 x 8) in 2, d fp32. */
static __device__ inline void mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, __nv_bfloat16) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
static __device__ inline void mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1, __half) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ inline uint32_t shared_u32(const void *p) { return *(const uint32_t *)p; }

/* The a operand of k-step k0 for rows r0.. of m (row-major in shared memory, rows ld apart). */
template <typename T>
static __device__ inline void load_a(uint32_t a[4], const T *m, int ld, int r0, int k0, int lane) {
  const T *at = m + (r0 + lane / 4) * ld + k0 + 2 * (lane % 4);
  a[0] = shared_u32(at), a[1] = shared_u32(at + 8 * ld), a[2] = shared_u32(at + 8), a[3] = shared_u32(at + 8 * ld + 8);
}

/* The b operand of k-step k0, n8 tile n0, of a product by m's transpose: m (n x k)
 * row-major, so that b's column n is m's row n, two elements a register. */
template <typename T>
static __device__ inline void load_b_of_rows(uint32_t &b0, uint32_t &b1, const T *m, int ld, int k0, int n0, int lane) {
  const T *at = m + (n0 + lane / 4) * ld + k0 + 2 * (lane % 4);
  b0 = shared_u32(at), b1 = shared_u32(at + 8);
}

/* The b operands of k-step k0, n8 tiles n0 and n0 + 8, of a product by m itself: m (k x n)
 * row-major, whose columns ldmatrix.trans gathers (lanes 8i..8i+7 name the rows of its
 * i-th 8 x 8 matrix): b[0], b[1] for n0 and b[2], b[3] for n0 + 8. */
template <typename T>
static __device__ inline void load_b_of_columns(uint32_t b[4], const T *m, int ld, int k0, int n0, int lane) {
  const T *row = m + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * ld + n0 + (lane >> 4) * 8;
  uint32_t at = (uint32_t)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
               : "r"(at));
}

/* The a operand of k-step kk from sums s of n8 tiles 2kk and 2kk + 1, rounded to T. */
template <typename T>
static __device__ inline void a_of_sums(uint32_t a[4], const float s0[4], const float s1[4]) {
  a[0] = pack2<T>(s0[0], s0[1]), a[1] = pack2<T>(s0[2], s0[3]);
  a[2] = pack2<T>(s1[0], s1[1]), a[3] = pack2<T>(s1[2], s1[3]);
}

/* valid rows of HD elements from src (the first at element first, each stride after the
 * one before) into dst (rows HD + 8 apart), 16 bytes a load; 0 past valid rows. */
template <typename T, int HD>
static __device__ void load_tile(T *dst, struct gpu_buf src, size_t first, int valid, size_t stride) {
  const int CHUNKS = HD / 8, LD = HD + 8;
  const T *from = (const T *)src.data + first;
  for (int i = threadIdx.x; i < TILE * CHUNKS; i += TC_THREADS) {
    int r = i / CHUNKS, c = i % CHUNKS * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (r < valid) x = *(const uint4 *)(from + (size_t)r * stride + c);
    *(uint4 *)(dst + r * LD + c) = x;
  }
}

/* The query tile qt's rows (from element oa of out and dout, rows os apart): each row's
 * D = dout . out and lse (+inf past T: p = 0 there), 2 threads a row. */
template <typename T, int HD>
static __device__ void rows_in(float *D, float *lse_s, struct gpu_buf dout, struct gpu_buf out, const float *lse,
                               size_t lse_at, size_t oa, int os, struct span qt) {
  int r = threadIdx.x / 2, half = threadIdx.x % 2;
  float d = 0.0f;
  if (r < qt.n) {
    size_t at = oa + (size_t)r * os + half * (HD / 2);
    const uint4 *a = (const uint4 *)((const T *)dout.data + at), *b = (const uint4 *)((const T *)out.data + at);
#pragma unroll
    for (int i = 0; i < HD / 16; i++) {
      uint4 x = a[i], y = b[i];
      const uint32_t xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
#pragma unroll
      for (int j = 0; j < 4; j++) {
        float2 u = unpack2<T>(xs[j]), w = unpack2<T>(ys[j]);
        d += u.x * w.x + u.y * w.y;
      }
    }
  }
  d += __shfl_xor_sync(FULL_MASK, d, 1);
  if (half == 0) {
    D[r] = d;
    lse_s[r] = r < qt.n ? lse[lse_at + r] : INFINITY;
  }
}

/* dst[at], dst[at + 1] = x, y rounded to T (store), or += (accumulate). */
template <typename T>
static __device__ inline void store_pair(struct gpu_buf dst, size_t at, float x, float y, bool accumulate) {
  uint32_t *p = (uint32_t *)((T *)dst.data + at);
  if (accumulate) {
    float2 old = unpack2<T>(*p);
    x += old.x, y += old.y;
  }
  *p = pack2<T>(x, y);
}

/* ---- The forward ----
 * Per key tile a warp's 16 x 64 scores (8 n8 tiles), the online softmax on them, p rounded
 * into the a operand of p v, whose 16 x hd sums rescale and grow in registers. Grid
 * (query tiles, NH, B), the last query tile (which sees every key) first. Shared memory
 * (cuda_attention_smem): q, k, v (a tile each). */
template <typename T, int HD>
static __global__ void __launch_bounds__(TC_THREADS)
    flash_forward_tc_kernel(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                            struct gpu_attention_layout l, float scale) {
  const int LD = HD + 8, KSTEPS = HD / 16, OTILES = HD / 8, STILES = TILE / 8;
  extern __shared__ __align__(128) float smem[];
  T *qs = (T *)smem, *ks = qs + TILE * LD, *vs = ks + TILE * LD;
  int lane = threadIdx.x % 32, w0 = threadIdx.x / 32 * WARP_ROWS, t = lane % 4;
  int qi = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z, g = h / (l.NH / l.NKV);
  int os = l.NH * HD;
  struct span qt = span_of(qi, l.T);
  size_t kva = head_at(l.T, l.kvs, HD, b, g);
  load_tile<T, HD>(qs, q, head_at(l.T, l.qs, HD, b, h) + (size_t)qt.r0 * l.qs, qt.n, l.qs);
  __syncthreads();
  uint32_t qf[KSTEPS][4];
#pragma unroll
  for (int kk = 0; kk < KSTEPS; kk++) load_a(qf[kk], qs, LD, w0, 16 * kk, lane);
  float o[OTILES][4] = {}, m[2] = {-INFINITY, -INFINITY}, lsum[2] = {0.0f, 0.0f};
  int query = qt.r0 + w0 + lane / 4; /* row 0 of the lane's; row 1 is query + 8 */
  for (int kj = 0; kj <= qi; kj++) {
    struct span kt = span_of(kj, l.T);
    __syncthreads(); /* the previous tile's readers are done */
    load_tile<T, HD>(ks, k, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs);
    load_tile<T, HD>(vs, v, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs);
    __syncthreads();
    float s[STILES][4] = {};
#pragma unroll
    for (int j = 0; j < STILES; j++)
#pragma unroll
      for (int kk = 0; kk < KSTEPS; kk++) {
        uint32_t b0, b1;
        load_b_of_rows(b0, b1, ks, LD, 16 * kk, 8 * j, lane);
        mma(s[j], qf[kk], b0, b1, T());
      }
    float mx[2] = {m[0], m[1]};
#pragma unroll
    for (int j = 0; j < STILES; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        int c = 8 * j + 2 * t + (e & 1), r = e / 2;
        float x = c < kt.n && kt.r0 + c <= query + 8 * r ? s[j][e] * scale : -INFINITY;
        s[j][e] = x;
        mx[r] = fmaxf(mx[r], x);
      }
    float rescale[2], sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int r = 0; r < 2; r++) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(FULL_MASK, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(FULL_MASK, mx[r], 2));
    }
#pragma unroll
    for (int j = 0; j < STILES; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        float p = expf(s[j][e] - mx[e / 2]);
        sum[e / 2] += p;
        s[j][e] = p;
      }
#pragma unroll
    for (int r = 0; r < 2; r++) {
      sum[r] += __shfl_xor_sync(FULL_MASK, sum[r], 1);
      sum[r] += __shfl_xor_sync(FULL_MASK, sum[r], 2);
      rescale[r] = expf(m[r] - mx[r]);
      lsum[r] = lsum[r] * rescale[r] + sum[r];
      m[r] = mx[r];
    }
#pragma unroll
    for (int j = 0; j < OTILES; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[j][e] *= rescale[e / 2];
#pragma unroll
    for (int kk = 0; kk < TILE / 16; kk++) {
      uint32_t a[4];
      a_of_sums<T>(a, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
      for (int j = 0; j < OTILES; j += 2) {
        uint32_t bv[4];
        load_b_of_columns(bv, vs, LD, 16 * kk, 8 * j, lane);
        mma(o[j], a, bv[0], bv[1], T());
        mma(o[j + 1], a, bv[2], bv[3], T());
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    int row = w0 + lane / 4 + 8 * r;
    if (row >= qt.n) continue;
    size_t oa = head_at(l.T, os, HD, b, h) + (size_t)(qt.r0 + row) * os + 2 * t;
    float inv = 1.0f / lsum[r];
#pragma unroll
    for (int j = 0; j < OTILES; j++) store_pair<T>(out, oa + 8 * j, o[j][2 * r] * inv, o[j][2 * r + 1] * inv, false);
    if (t == 0) lse[((size_t)b * l.NH + h) * l.T + qt.r0 + row] = m[r] + logf(lsum[r]);
  }
}

/* ---- The backward: two passes, each gradient with one writer (no atomics) ----
 * Both recompute p = exp(s - lse) and ds = p (dp - D) per tile pair, 32 columns at a time
 * (registers: hd 128's sums take 128 a lane in the key pass). */
static const int HALF = TILE / 2, HALF_TILES = HALF / 8;

/* A warp's sums against the 32 columns from c0 of the other side's tile: s += x y^T and
 * dp += dx dy^T, x and dx this warp's 16 rows (from w0), y and dy the columns' rows: in the
 * key pass x, y, dx, dy are k, q, v, dout (s and dp transposed); in the dq pass q, k,
 * dout, v. */
template <typename T, int HD>
static __device__ void scores_and_dp(float s[HALF_TILES][4], float dp[HALF_TILES][4], const T *x, const T *y,
                                     const T *dx, const T *dy, int w0, int c0, int lane) {
  const int LD = HD + 8;
#pragma unroll
  for (int kk = 0; kk < HD / 16; kk++) {
    uint32_t xa[4], dxa[4];
    load_a(xa, x, LD, w0, 16 * kk, lane);
    load_a(dxa, dx, LD, w0, 16 * kk, lane);
#pragma unroll
    for (int j = 0; j < HALF_TILES; j++) {
      uint32_t b0, b1;
      load_b_of_rows(b0, b1, y, LD, 16 * kk, c0 + 8 * j, lane);
      mma(s[j], xa, b0, b1, T());
      load_b_of_rows(b0, b1, dy, LD, 16 * kk, c0 + 8 * j, lane);
      mma(dp[j], dxa, b0, b1, T());
    }
  }
}

/* The key pass: a warp's 16 keys against each query tile that sees them, of each query
 * head of their kv head: s and dp transposed (keys x queries), then dv += p^T dout and
 * dk += ds^T q. Grid (key tiles, NKV, B). Shared memory (cuda_attention_smem): k, v, q,
 * dout (a tile each), D, lse (fp32, a tile's rows each). */
template <typename T, int HD>
static __global__ void __launch_bounds__(TC_THREADS)
    flash_backward_kv_tc_kernel(struct gpu_buf dk, struct gpu_buf dv, struct gpu_buf dout, struct gpu_buf q,
                                struct gpu_buf k, struct gpu_buf v, struct gpu_buf out, const float *lse,
                                struct gpu_attention_layout l, float scale, bool accumulate) {
  const int LD = HD + 8, OTILES = HD / 8;
  extern __shared__ __align__(128) float smem[];
  T *ks = (T *)smem, *vs = ks + TILE * LD, *qs = vs + TILE * LD, *dos = qs + TILE * LD;
  float *D = (float *)(dos + TILE * LD), *lse_s = D + TILE;
  int lane = threadIdx.x % 32, w0 = threadIdx.x / 32 * WARP_ROWS, t = lane % 4;
  int kj = blockIdx.x, g = blockIdx.y, b = blockIdx.z;
  int os = l.NH * HD, group = l.NH / l.NKV, nt = (l.T + TILE - 1) / TILE;
  struct span kt = span_of(kj, l.T);
  size_t kva = head_at(l.T, l.kvs, HD, b, g) + (size_t)kt.r0 * l.kvs;
  load_tile<T, HD>(ks, k, kva, kt.n, l.kvs);
  load_tile<T, HD>(vs, v, kva, kt.n, l.kvs);
  float dk_sum[OTILES][4] = {}, dv_sum[OTILES][4] = {};
  int key_row = w0 + lane / 4; /* row 0 of the lane's in the tile; row 1 is key_row + 8 */
  for (int h = g * group; h < (g + 1) * group; h++)
    for (int qi = kj; qi < nt; qi++) {
      struct span qt = span_of(qi, l.T);
      size_t oa = head_at(l.T, os, HD, b, h) + (size_t)qt.r0 * os;
      __syncthreads();
      load_tile<T, HD>(qs, q, head_at(l.T, l.qs, HD, b, h) + (size_t)qt.r0 * l.qs, qt.n, l.qs);
      load_tile<T, HD>(dos, dout, oa, qt.n, os);
      rows_in<T, HD>(D, lse_s, dout, out, lse, ((size_t)b * l.NH + h) * l.T + qt.r0, oa, os, qt);
      __syncthreads();
#pragma unroll
      for (int half = 0; half < 2; half++) {
        int c0 = half * HALF;
        float s[HALF_TILES][4] = {}, dp[HALF_TILES][4] = {};
        scores_and_dp<T, HD>(s, dp, ks, qs, vs, dos, w0, c0, lane);
#pragma unroll
        for (int j = 0; j < HALF_TILES; j++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            int c = c0 + 8 * j + 2 * t + (e & 1), r = key_row + 8 * (e / 2);
            float p = 0.0f, ds = 0.0f;
            if (r < kt.n && c < qt.n && kt.r0 + r <= qt.r0 + c) {
              p = expf(s[j][e] * scale - lse_s[c]);
              ds = p * (dp[j][e] - D[c]);
            }
            s[j][e] = p, dp[j][e] = ds;
          }
#pragma unroll
        for (int kk = 0; kk < HALF / 16; kk++) {
          uint32_t pa[4], dsa[4];
          a_of_sums<T>(pa, s[2 * kk], s[2 * kk + 1]);
          a_of_sums<T>(dsa, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
          for (int j = 0; j < OTILES; j += 2) {
            uint32_t bo[4];
            load_b_of_columns(bo, dos, LD, c0 + 16 * kk, 8 * j, lane);
            mma(dv_sum[j], pa, bo[0], bo[1], T());
            mma(dv_sum[j + 1], pa, bo[2], bo[3], T());
            load_b_of_columns(bo, qs, LD, c0 + 16 * kk, 8 * j, lane);
            mma(dk_sum[j], dsa, bo[0], bo[1], T());
            mma(dk_sum[j + 1], dsa, bo[2], bo[3], T());
          }
        }
      }
    }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    int row = key_row + 8 * r;
    if (row >= kt.n) continue;
    size_t at = kva + (size_t)row * l.kvs + 2 * t;
#pragma unroll
    for (int j = 0; j < OTILES; j++) {
      if (dk.data)
        store_pair<T>(dk, at + 8 * j, dk_sum[j][2 * r] * scale, dk_sum[j][2 * r + 1] * scale, accumulate);
      if (dv.data) store_pair<T>(dv, at + 8 * j, dv_sum[j][2 * r], dv_sum[j][2 * r + 1], accumulate);
    }
  }
}

/* The dq pass: a warp's 16 queries against each key tile they see: s and dp, then
 * dq += ds k. Grid (query tiles, NH, B), the last query tile first. Shared memory as the
 * key pass's. */
template <typename T, int HD>
static __global__ void __launch_bounds__(TC_THREADS)
    flash_backward_q_tc_kernel(struct gpu_buf dq, struct gpu_buf dout, struct gpu_buf q, struct gpu_buf k,
                               struct gpu_buf v, struct gpu_buf out, const float *lse, struct gpu_attention_layout l,
                               float scale, bool accumulate) {
  const int LD = HD + 8, OTILES = HD / 8;
  extern __shared__ __align__(128) float smem[];
  T *ks = (T *)smem, *vs = ks + TILE * LD, *qs = vs + TILE * LD, *dos = qs + TILE * LD;
  float *D = (float *)(dos + TILE * LD), *lse_s = D + TILE;
  int lane = threadIdx.x % 32, w0 = threadIdx.x / 32 * WARP_ROWS, t = lane % 4;
  int qi = gridDim.x - 1 - blockIdx.x, h = blockIdx.y, b = blockIdx.z, g = h / (l.NH / l.NKV);
  int os = l.NH * HD;
  struct span qt = span_of(qi, l.T);
  size_t qa = head_at(l.T, l.qs, HD, b, h) + (size_t)qt.r0 * l.qs;
  size_t oa = head_at(l.T, os, HD, b, h) + (size_t)qt.r0 * os, kva = head_at(l.T, l.kvs, HD, b, g);
  load_tile<T, HD>(qs, q, qa, qt.n, l.qs);
  load_tile<T, HD>(dos, dout, oa, qt.n, os);
  rows_in<T, HD>(D, lse_s, dout, out, lse, ((size_t)b * l.NH + h) * l.T + qt.r0, oa, os, qt);
  __syncthreads();
  int row = w0 + lane / 4; /* row 0 of the lane's in the tile; row 1 is row + 8 */
  float row_lse[2] = {lse_s[row], lse_s[row + 8]}, row_D[2] = {D[row], D[row + 8]};
  float dq_sum[OTILES][4] = {};
  for (int kj = 0; kj <= qi; kj++) {
    struct span kt = span_of(kj, l.T);
    __syncthreads();
    load_tile<T, HD>(ks, k, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs);
    load_tile<T, HD>(vs, v, kva + (size_t)kt.r0 * l.kvs, kt.n, l.kvs);
    __syncthreads();
#pragma unroll
    for (int half = 0; half < 2; half++) {
      int c0 = half * HALF;
      float s[HALF_TILES][4] = {}, dp[HALF_TILES][4] = {};
      scores_and_dp<T, HD>(s, dp, qs, ks, dos, vs, w0, c0, lane);
#pragma unroll
      for (int j = 0; j < HALF_TILES; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          int c = c0 + 8 * j + 2 * t + (e & 1), r = row + 8 * (e / 2);
          float ds = 0.0f;
          if (r < qt.n && c < kt.n && kt.r0 + c <= qt.r0 + r) {
            float p = expf(s[j][e] * scale - row_lse[e / 2]);
            ds = p * (dp[j][e] - row_D[e / 2]);
          }
          dp[j][e] = ds;
        }
#pragma unroll
      for (int kk = 0; kk < HALF / 16; kk++) {
        uint32_t dsa[4];
        a_of_sums<T>(dsa, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
        for (int j = 0; j < OTILES; j += 2) {
          uint32_t bk[4];
          load_b_of_columns(bk, ks, LD, c0 + 16 * kk, 8 * j, lane);
          mma(dq_sum[j], dsa, bk[0], bk[1], T());
          mma(dq_sum[j + 1], dsa, bk[2], bk[3], T());
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; r++) {
    if (row + 8 * r >= qt.n) continue;
    size_t at = qa + (size_t)(row + 8 * r) * l.qs + 2 * t;
#pragma unroll
    for (int j = 0; j < OTILES; j++)
      store_pair<T>(dq, at + 8 * j, dq_sum[j][2 * r] * scale, dq_sum[j][2 * r + 1] * scale, accumulate);
  }
}

/* The shared memory kernel k takes at head dim HD, where the device has that much
 * (cuda_attention_tiling: the 16-bit tiles' largest, 68.5 KiB, fits every arch built). */
template <typename T>
static cudaError_t tc_smem(enum cuda_attention_kernel k, int hd, size_t smem_limit, size_t *bytes) {
  static_assert(sizeof(T) == 2, "cuda_attention_smem sizes 16-bit tiles");
  struct cuda_attention_tiling t = cuda_attention_tiling(k, 1, hd, smem_limit);
  *bytes = t.smem;
  return t.rows ? cudaSuccess : cudaErrorInvalidConfiguration;
}

template <typename T, int HD>
static cudaError_t forward_tc(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                              struct gpu_attention_layout l, size_t smem_limit, cudaStream_t s) {
  size_t bytes;
  cudaError_t rc = tc_smem<T>(CUDA_ATTENTION_FORWARD, HD, smem_limit, &bytes);
  if (rc != cudaSuccess) return rc;
  rc = allow_smem(flash_forward_tc_kernel<T, HD>, bytes);
  if (rc != cudaSuccess) return rc;
  flash_forward_tc_kernel<T, HD>
      <<<grid_of(l, l.NH), TC_THREADS, bytes, s>>>(out, lse, q, k, v, l, 1.0f / sqrtf((float)HD));
  return cudaGetLastError();
}

template <typename T, int HD>
static cudaError_t backward_tc(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv, bool accumulate,
                               struct gpu_buf dout, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                               struct gpu_buf out, const float *lse, struct gpu_attention_layout l,
                               size_t smem_limit, cudaStream_t s) {
  float scale = 1.0f / sqrtf((float)HD);
  size_t bytes;
  cudaError_t rc;
  if (dk.data || dv.data) {
    if ((rc = tc_smem<T>(CUDA_ATTENTION_BACKWARD_KV, HD, smem_limit, &bytes)) != cudaSuccess) return rc;
    if ((rc = allow_smem(flash_backward_kv_tc_kernel<T, HD>, bytes)) != cudaSuccess) return rc;
    flash_backward_kv_tc_kernel<T, HD>
        <<<grid_of(l, l.NKV), TC_THREADS, bytes, s>>>(dk, dv, dout, q, k, v, out, lse, l, scale, accumulate);
    if ((rc = cudaGetLastError()) != cudaSuccess) return rc;
  }
  if (dq.data) {
    if ((rc = tc_smem<T>(CUDA_ATTENTION_BACKWARD_Q, HD, smem_limit, &bytes)) != cudaSuccess) return rc;
    if ((rc = allow_smem(flash_backward_q_tc_kernel<T, HD>, bytes)) != cudaSuccess) return rc;
    flash_backward_q_tc_kernel<T, HD>
        <<<grid_of(l, l.NH), TC_THREADS, bytes, s>>>(dq, dout, q, k, v, out, lse, l, scale, accumulate);
  }
  return cudaGetLastError();
}

cudaError_t flash_tc_forward(struct gpu_buf out, float *lse, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                             struct gpu_attention_layout l, size_t smem_limit, cudaStream_t s) {
  if (out.dtype == DTYPE_BF16)
    return l.hd == 64 ? forward_tc<__nv_bfloat16, 64>(out, lse, q, k, v, l, smem_limit, s)
                      : forward_tc<__nv_bfloat16, 128>(out, lse, q, k, v, l, smem_limit, s);
  return l.hd == 64 ? forward_tc<__half, 64>(out, lse, q, k, v, l, smem_limit, s)
                    : forward_tc<__half, 128>(out, lse, q, k, v, l, smem_limit, s);
}

cudaError_t flash_tc_backward(struct gpu_buf dq, struct gpu_buf dk, struct gpu_buf dv, int accumulate,
                              struct gpu_buf dout, struct gpu_buf q, struct gpu_buf k, struct gpu_buf v,
                              struct gpu_buf out, const float *lse, struct gpu_attention_layout l, size_t smem_limit,
                              cudaStream_t s) {
  bool add = accumulate != 0;
  if (dout.dtype == DTYPE_BF16)
    return l.hd == 64 ? backward_tc<__nv_bfloat16, 64>(dq, dk, dv, add, dout, q, k, v, out, lse, l, smem_limit, s)
                      : backward_tc<__nv_bfloat16, 128>(dq, dk, dv, add, dout, q, k, v, out, lse, l, smem_limit, s);
  return l.hd == 64 ? backward_tc<__half, 64>(dq, dk, dv, add, dout, q, k, v, out, lse, l, smem_limit, s)
                    : backward_tc<__half, 128>(dq, dk, dv, add, dout, q, k, v, out, lse, l, smem_limit, s);
}
