/* Attention's launchers on the GPU: GPT-2's packed qkv and Llama's grouped-query heads
 * on one tiled kernel (flash_attention.cu), the KV-cache attention of generation on
 * cached_attention.cu; twins of ../cpu/attention.c and ../cpu/cached_attention.c. */
#include <stdlib.h>

#include "attention_kernels.h"
#include "cuda.h"
#include "launch.h"

static struct gpu_buf buf(struct tensor t) { return (struct gpu_buf){t.data, t.dtype}; }

static int dim(struct tensor t, int i) { return (int)t.shape[i]; }

/* nn.c has checked that the shapes agree; here, that the kernels take them. */
static struct gpu_attention_layout checked(const char *op, struct gpu_attention_layout l) {
  if (l.hd > FLASH_HD_MAX) fsdp_fatal("nn: %s on cuda takes head dims up to %d, not %d", op, FLASH_HD_MAX, l.hd);
  return l;
}

/* The shared memory a block of this thread's device may have, by which the kernels choose
 * their tiling; the head dim must fit it on CUDA cores (the tensor cores' tiles are
 * smaller), as it does on every arch of fsdp/cuda_arch.h's table (tests/cuda_arch_test.c).
 * FSDP_CUDA_SMEM_LIMIT=BYTES lowers it (never raises it): the tiling of a GPU with less,
 * run on this one (nn_cuda_layers_test and nn_cuda_llama_test run sm_86's 101376 so). */
static size_t smem_limit(const char *op, int hd) {
  int device = 0, bytes = 0;
  layer_check(op, cudaGetDevice(&device));
  layer_check(op, cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const char *cap = getenv("FSDP_CUDA_SMEM_LIMIT");
  if (cap && *cap) {
    char *end;
    long v = strtol(cap, &end, 10);
    if (*end != '\0' || v <= 0) fsdp_fatal("FSDP_CUDA_SMEM_LIMIT: '%s' is not a positive number of bytes", cap);
    if (v < bytes) bytes = (int)v;
  }
  for (int k = CUDA_ATTENTION_FORWARD; k <= CUDA_ATTENTION_BACKWARD_Q; k++) {
    struct cuda_attention_tiling t = cuda_attention_tiling((enum cuda_attention_kernel)k, 0, hd, (size_t)bytes);
    if (!t.rows)
      fsdp_fatal("nn: %s on cuda: the attention %s at head dim %d needs %zu bytes of shared memory a block, and this "
                 "GPU allows %d",
                 op, cuda_attention_kernel_name((enum cuda_attention_kernel)k), hd, t.smem, bytes);
  }
  return (size_t)bytes;
}

/* GPT-2's packed qkv (B, T, 3C): q, k and v side by side in each row, NKV = NH. */
static struct gpu_attention_layout packed_layout(const char *op, struct tensor lse, struct tensor out) {
  int NH = dim(lse, 1), C = (int)tensor_cols(&out);
  return checked(op, (struct gpu_attention_layout){dim(lse, 0), dim(lse, 2), NH, NH, C / NH, 3 * C, 3 * C});
}

/* Llama's q (B, T, NH, hd), k and v (B, T, NKV, hd). */
static struct gpu_attention_layout gqa_layout(const char *op, struct tensor q, struct tensor k) {
  return checked(op, (struct gpu_attention_layout){dim(q, 0), dim(q, 1), dim(q, 2), dim(k, 2), dim(q, 3),
                                                   dim(q, 2) * dim(q, 3), dim(k, 2) * dim(k, 3)});
}

/* Part i (0: q, 1: k, 2: v) of a packed qkv or of its gradient (none without data). */
static struct gpu_buf packed_part(struct tensor qkv, int C, int i) {
  struct gpu_buf b = buf(qkv);
  if (b.data) b.data = (char *)b.data + (size_t)i * C * dtype_size(qkv.dtype);
  return b;
}

void cuda_attention_forward(void *p) {
  const struct attention_args *a = p;
  const char *op = "attention_forward";
  struct gpu_attention_layout l = packed_layout(op, a->lse, a->out);
  int C = l.NH * l.hd;
  layer_check(op, gpu_flash_attention_forward(buf(a->out), a->lse.data, packed_part(a->qkv, C, 0),
                                              packed_part(a->qkv, C, 1), packed_part(a->qkv, C, 2), l,
                                              smem_limit(op, l.hd), layer_stream()));
}

void cuda_attention_backward(void *p) {
  const struct attention_backward_args *a = p;
  const char *op = "attention_backward";
  if (!a->dqkv.data) return;
  struct gpu_attention_layout l = packed_layout(op, a->lse, a->dout);
  int C = l.NH * l.hd;
  layer_check(op, gpu_flash_attention_backward(packed_part(a->dqkv, C, 0), packed_part(a->dqkv, C, 1),
                                               packed_part(a->dqkv, C, 2), a->dqkv_mode == NN_GRAD_ADD, buf(a->dout), packed_part(a->qkv, C, 0),
                                               packed_part(a->qkv, C, 1), packed_part(a->qkv, C, 2), buf(a->out),
                                               a->lse.data, l, smem_limit(op, l.hd), layer_stream()));
}

void cuda_gqa_attention_forward(void *p) {
  const struct gqa_attention_args *a = p;
  const char *op = "gqa_attention_forward";
  struct gpu_attention_layout l = gqa_layout(op, a->q, a->k);
  layer_check(op, gpu_flash_attention_forward(buf(a->out), a->lse.data, buf(a->q), buf(a->k), buf(a->v), l,
                                              smem_limit(op, l.hd), layer_stream()));
}

void cuda_gqa_attention_backward(void *p) {
  const struct gqa_attention_backward_args *a = p;
  const char *op = "gqa_attention_backward";
  struct gpu_attention_layout l = gqa_layout(op, a->q, a->k);
  layer_check(op, gpu_flash_attention_backward(buf(a->dq), buf(a->dk), buf(a->dv), a->mode == NN_GRAD_ADD,
                                               buf(a->dout), buf(a->q), buf(a->k), buf(a->v), buf(a->out),
                                               a->lse.data, l, smem_limit(op, l.hd), layer_stream()));
}

void cuda_cached_attention_forward(void *p) {
  const struct cached_attention_args *a = p;
  const char *op = "cached_attention_forward";
  int hd = dim(a->q, 2);
  if (hd > FLASH_HD_MAX) fsdp_fatal("nn: %s on cuda takes head dims up to %d, not %d", op, FLASH_HD_MAX, hd);
  layer_check(op, gpu_cached_attention_forward(buf(a->out), buf(a->q), buf(a->k), buf(a->v), dim(a->q, 0),
                                               dim(a->k, 0), dim(a->q, 1), dim(a->k, 1), hd, layer_stream()));
}
