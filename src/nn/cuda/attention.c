/* Attention's launchers on the GPU: GPT-2's packed qkv and Llama's grouped-query heads
 * on one tiled kernel (flash_attention.cu), the KV-cache attention of generation on
 * cached_attention.cu; twins of ../cpu/attention.c and ../cpu/cached_attention.c. */
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
                                              layer_stream()));
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
                                               a->lse.data, l, layer_stream()));
}

void cuda_gqa_attention_forward(void *p) {
  const struct gqa_attention_args *a = p;
  const char *op = "gqa_attention_forward";
  layer_check(op, gpu_flash_attention_forward(buf(a->out), a->lse.data, buf(a->q), buf(a->k), buf(a->v),
                                              gqa_layout(op, a->q, a->k), layer_stream()));
}

void cuda_gqa_attention_backward(void *p) {
  const struct gqa_attention_backward_args *a = p;
  const char *op = "gqa_attention_backward";
  layer_check(op, gpu_flash_attention_backward(buf(a->dq), buf(a->dk), buf(a->dv), a->mode == NN_GRAD_ADD,
                                               buf(a->dout), buf(a->q), buf(a->k), buf(a->v), buf(a->out),
                                               a->lse.data, gqa_layout(op, a->q, a->k), layer_stream()));
}

void cuda_cached_attention_forward(void *p) {
  const struct cached_attention_args *a = p;
  const char *op = "cached_attention_forward";
  int hd = dim(a->q, 2);
  if (hd > FLASH_HD_MAX) fsdp_fatal("nn: %s on cuda takes head dims up to %d, not %d", op, FLASH_HD_MAX, hd);
  layer_check(op, gpu_cached_attention_forward(buf(a->out), buf(a->q), buf(a->k), buf(a->v), dim(a->q, 0),
                                               dim(a->k, 0), dim(a->q, 1), dim(a->k, 1), hd, layer_stream()));
}
