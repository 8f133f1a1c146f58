/* Attention of new positions over a KV cache on the GPU, the twin of
 * ../cpu/cached_attention.c: the same one pass over the keys with an online softmax. A
 * warp per (query, head): lane l holds elements l, l + 32, ... of the query row and of
 * the output row, a score is the warp's butterfly sum, and every lane keeps the same
 * running maximum and sum. Decoding has few queries, so a warp's serial walk over the
 * cache is the cost of keeping no scores at all. */
#include <math.h>

#include "attention_kernels.h"
#include "elem.cuh"
#include "reduce.cuh"

static const int PER_LANE = FLASH_HD_MAX / 32;

/* Grid (n, NH), a warp each: n on x, as a whole prompt (one step) may pass y's limit of 65535. */
static __global__ void cached_attention_kernel(struct gpu_buf out, struct gpu_buf q, struct gpu_buf k,
                                               struct gpu_buf v, int n, int L, int NH, int NKV, int hd,
                                               float scale) {
  int i = blockIdx.x, h = blockIdx.y, lane = threadIdx.x, last = L - n + i;
  size_t qa = ((size_t)i * NH + h) * hd, kvs = (size_t)NKV * hd, ga = (size_t)(h / (NH / NKV)) * hd;
  float qr[PER_LANE], o[PER_LANE] = {}, m = -INFINITY, l = 0.0f;
#pragma unroll
  for (int j = 0; j < PER_LANE; j++) {
    int e = lane + 32 * j;
    qr[j] = e < hd ? elem_get(q, qa + e) : 0.0f;
  }
  for (int t = 0; t <= last; t++) {
    size_t at = (size_t)t * kvs + ga;
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < PER_LANE; j++) {
      int e = lane + 32 * j;
      if (e < hd) s += qr[j] * elem_get(k, at + e);
    }
    s = warp_sum_all(s) * scale;
    float mx = fmaxf(m, s), rescale = expf(m - mx), w = expf(s - mx);
    l = l * rescale + w;
    m = mx;
#pragma unroll
    for (int j = 0; j < PER_LANE; j++) {
      int e = lane + 32 * j;
      if (e < hd) o[j] = o[j] * rescale + w * elem_get(v, at + e);
    }
  }
  float inv = 1.0f / l;
#pragma unroll
  for (int j = 0; j < PER_LANE; j++) {
    int e = lane + 32 * j;
    if (e < hd) elem_set(out, qa + e, o[j] * inv);
  }
}

extern "C" cudaError_t gpu_cached_attention_forward(struct gpu_buf out, struct gpu_buf q, struct gpu_buf k,
                                                    struct gpu_buf v, int n, int L, int NH, int NKV, int hd,
                                                    cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  cached_attention_kernel<<<dim3((unsigned)n, (unsigned)NH), 32, 0, s>>>(out, q, k, v, n, L, NH, NKV, hd,
                                                                        1.0f / sqrtf((float)hd));
  return cudaGetLastError();
}
