/* GPT-2's causal self-attention from the packed qkv (B, T, 3C), twin of ../cpu/attention.c.
 * For each batch element b and head h, with q, k, v the head's (T, hs) slices of qkv
 * (rows 3C apart) and hs = C / NH:
 *   forward:  att = causal_softmax(q k^T / sqrt(hs)),  out = att @ v (heads side by side)
 *   backward: dv += att^T dout,  datt = dout v^T,
 *             dpreatt = att * (datt - rowsum(att * datt)) (0 where masked),
 *             dq += dpreatt k / sqrt(hs),  dk += dpreatt^T q / sqrt(hs)
 * The products are cuBLASLt GEMMs batched over the heads: a head's slice starts hs
 * elements after the previous one's, a strided batch with interleaved matrices, so the
 * heads need no permuted copy. The batch elements are a loop (their stride differs from
 * the heads'). The score GEMM fills att's masked upper triangle too, which the softmax
 * (softmax.cu) overwrites with 0; in a 16-bit dtype the scores are rounded to it before
 * the softmax, as att itself is. This is the straightforward form, O(T^2) memory as the
 * model keeps att anyway; a fused (flash) kernel is the later optimisation. */
#include <math.h>

#include "cuda.h"
#include "gemm.h"
#include "launch.h"
#include "layers.h"

/* The backward's datt for one batch element at a time: (NH, T, T) in the compute dtype. */
size_t cuda_gpt2_attention_backward_scratch(const struct tensor *att) {
  return att->shape[1] * att->shape[2] * att->shape[3] * dtype_size(att->dtype);
}

struct heads {
  int B, NH, T, C, hs;
  size_t elem;
  void *workspace; /* cuBLASLt's, the op's */
};

static struct heads heads_of(struct tensor att, struct tensor out_or_dout, enum dtype d, void *workspace) {
  struct heads h = {(int)att.shape[0], (int)att.shape[1], (int)att.shape[2], (int)tensor_cols(&out_or_dout), 0,
                    dtype_size(d), workspace};
  h.hs = h.C / h.NH;
  return h;
}

/* Element offset e of a buffer of dtype-sized elements. */
static void *at(const void *base, size_t e, size_t elem) { return (char *)base + e * elem; }

/* A head's slice of qkv or of its gradient (part 0: q, 1: k, 2: v) for batch element b:
 * rows 3C apart, head h + 1 hs elements after head h. */
static struct gemm_operand qkv_heads(const struct heads *h, const void *qkv, int b, int part, int transposed) {
  size_t e = (size_t)b * h->T * 3 * h->C + (size_t)part * h->C;
  return (struct gemm_operand){at(qkv, e, h->elem), 3 * h->C, h->hs, transposed};
}

/* att's (T, T) matrices of batch element b, one per head. */
static struct gemm_operand att_heads(const struct heads *h, const void *att, int b, int transposed) {
  return (struct gemm_operand){at(att, (size_t)b * h->NH * h->T * h->T, h->elem), h->T, (int64_t)h->T * h->T,
                               transposed};
}

/* out's or dout's (T, hs) slices of batch element b: rows C apart. */
static struct gemm_operand out_heads(const struct heads *h, const void *out, int b) {
  return (struct gemm_operand){at(out, (size_t)b * h->T * h->C, h->elem), h->C, h->hs, 0};
}

/* C = alpha A B + beta C over the NH heads, C given as an operand's place. */
static void head_gemm(const char *op, enum dtype d, const struct heads *h, int m, int n, int k, float alpha,
                      float beta, struct gemm_operand a, struct gemm_operand b, struct gemm_operand c,
                      cudaStream_t s) {
  struct gemm g = {.m = m, .n = n, .k = k, .batch = h->NH, .alpha = alpha, .beta = beta, .a = a, .b = b,
                   .c = (void *)c.data, .ldc = c.ld, .stride_c = c.stride, .workspace = h->workspace};
  gemm(op, d, &g, s);
}

void cuda_attention_forward(void *p) {
  const struct attention_args *a = p;
  const char *op = "attention_forward";
  enum dtype d = a->out.dtype;
  struct heads h = heads_of(a->att, a->out, d, a->workspace);
  const void *qkv = a->qkv.data;
  void *att = a->att.data, *out = a->out.data;
  float scale = 1.0f / sqrtf((float)h.hs);
  cudaStream_t s = layer_stream();
  for (int b = 0; b < h.B; b++)
    head_gemm(op, d, &h, h.T, h.T, h.hs, scale, 0.0f, qkv_heads(&h, qkv, b, 0, 0), qkv_heads(&h, qkv, b, 1, 1),
              att_heads(&h, att, b, 0), s);
  layer_check(op, gpu_causal_softmax_forward(d, att, (size_t)h.B * h.NH * h.T, h.T, s));
  for (int b = 0; b < h.B; b++)
    head_gemm(op, d, &h, h.T, h.hs, h.T, 1.0f, 0.0f, att_heads(&h, att, b, 0), qkv_heads(&h, qkv, b, 2, 0),
              out_heads(&h, out, b), s);
}

/* One batch element at a time, so that the scratch holds one element's datt: the work
 * runs in order on the op's stream, so element b + 1's GEMMs start after b's last read. */
void cuda_attention_backward(void *p) {
  const struct attention_backward_args *a = p;
  const char *op = "attention_backward";
  if (!a->dqkv.data) return;
  enum dtype d = a->dout.dtype;
  struct heads h = heads_of(a->att, a->dout, d, a->workspace);
  const void *qkv = a->qkv.data, *att = a->att.data, *dout = a->dout.data;
  void *dqkv = a->dqkv.data;
  FSDP_CHECK(a->scratch);
  struct gemm_operand datt = {a->scratch, h.T, (int64_t)h.T * h.T, 0};
  float scale = 1.0f / sqrtf((float)h.hs);
  cudaStream_t s = layer_stream();
  for (int b = 0; b < h.B; b++) {
    head_gemm(op, d, &h, h.T, h.hs, h.T, 1.0f, 1.0f, att_heads(&h, att, b, 1), out_heads(&h, dout, b),
              qkv_heads(&h, dqkv, b, 2, 0), s);
    head_gemm(op, d, &h, h.T, h.T, h.hs, 1.0f, 0.0f, out_heads(&h, dout, b), qkv_heads(&h, qkv, b, 2, 1), datt, s);
    layer_check(op, gpu_causal_softmax_backward(d, a->scratch, att_heads(&h, att, b, 0).data, (size_t)h.NH * h.T,
                                                h.T, s));
    struct gemm_operand dpreatt_t = datt;
    dpreatt_t.transposed = 1;
    head_gemm(op, d, &h, h.T, h.hs, h.T, scale, 1.0f, datt, qkv_heads(&h, qkv, b, 1, 0), qkv_heads(&h, dqkv, b, 0, 0),
              s);
    head_gemm(op, d, &h, h.T, h.hs, h.T, scale, 1.0f, dpreatt_t, qkv_heads(&h, qkv, b, 0, 0),
              qkv_heads(&h, dqkv, b, 1, 0), s);
  }
}
