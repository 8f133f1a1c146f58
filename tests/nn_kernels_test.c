/* Runs every CPU layer kernel on small, awkward sizes (and the truncated normal init) and writes all inputs,
 * outputs and gradients to a file for nn_kernels_check.py, which recomputes
 * them with PyTorch. Gradients start from random values, not zero, so that the
 * check also proves that every backward accumulates.
 * The file holds named tensors (tensor_file.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/nn.h"
#include "fsdp/rng.h"
#include "tensor_file.h"

static const uint64_t SEED = 1234;
static FILE *out_file;
static uint64_t next_stream;
/* The cpu device's kernels, on the calling thread. */
static struct nn_ctx cpu;

static struct tensor f1(float *x, int n) { return tensor_1d(x, DTYPE_F32, (size_t)n); }
static struct tensor f2(float *x, int rows, int cols) { return tensor_2d(x, DTYPE_F32, (size_t)rows, (size_t)cols); }
static struct tensor f3(float *x, int d0, int d1, int d2) {
  return (struct tensor){x, DTYPE_F32, 3, {(size_t)d0, (size_t)d1, (size_t)d2}};
}
static struct tensor i2(int *x, int rows, int cols) { return tensor_2d(x, DTYPE_I32, (size_t)rows, (size_t)cols); }

/* n normal values times scale plus shift, each tensor from its own Philox stream. */
static float *randn(size_t n, float scale, float shift) {
  uint64_t stream = next_stream++;
  float *x = fsdp_xmalloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) x[i] = rng_normal(SEED, stream, i) * scale + shift;
  return x;
}

static int *randint(size_t n, int below) {
  uint64_t stream = next_stream++;
  int *x = fsdp_xmalloc(n * sizeof(int));
  for (size_t i = 0; i < n; i++) x[i] = (int)rng_below(SEED, stream, i, (uint64_t)below);
  return x;
}

static float *copy(const float *x, size_t n) {
  float *y = fsdp_xmalloc(n * sizeof(float));
  memcpy(y, x, n * sizeof(float));
  return y;
}

#define DIMS(...) (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)), (int[]){__VA_ARGS__}
/* Writes local variable `field` as record "<kernel>/field"; kernel and name[64] are locals of the caller. */
#define W(field, ...) (snprintf(name, sizeof name, "%s/%s", kernel, #field), tensor_file_write(out_file, name, field, __VA_ARGS__))

/* positions 0: Llama's embedding, without wpe. */
static void test_encoder(const char *kernel, int B, int T, int C, int V, int maxT, int positions) {
  char name[64];
  int *inp = randint((size_t)B * T, V);
  float *wte = randn((size_t)V * C, 1.0f, 0.0f), *wpe = randn((size_t)maxT * C, 1.0f, 0.0f);
  float *out = randn((size_t)B * T * C, 1.0f, 0.0f), *dout = randn((size_t)B * T * C, 1.0f, 0.0f);
  float *dwte0 = randn((size_t)V * C, 1.0f, 0.0f), *dwpe0 = randn((size_t)maxT * C, 1.0f, 0.0f);
  float *dwte = copy(dwte0, (size_t)V * C), *dwpe = copy(dwpe0, (size_t)maxT * C);
  nn_encoder_forward(&cpu, f2(out, B * T, C), i2(inp, B, T), f2(wte, V, C),
                     positions ? f2(wpe, maxT, C) : TENSOR_NONE);
  nn_encoder_backward(&cpu, f2(dwte, V, C), positions ? f2(dwpe, maxT, C) : TENSOR_NONE, f2(dout, B * T, C),
                      i2(inp, B, T));
  snprintf(name, sizeof name, "%s/inp", kernel);
  tensor_file_write_ints(out_file, name, inp, DIMS(B, T));
  W(wte, DIMS(V, C));
  W(out, DIMS(B, T, C));
  W(dout, DIMS(B, T, C));
  W(dwte0, DIMS(V, C));
  W(dwte, DIMS(V, C));
  if (positions) {
    W(wpe, DIMS(maxT, C));
    W(dwpe0, DIMS(maxT, C));
    W(dwpe, DIMS(maxT, C));
  }
  free(inp), free(wte), free(wpe), free(out), free(dout), free(dwte0), free(dwpe0), free(dwte), free(dwpe);
}

static void test_layernorm(int N, int C) {
  const char *kernel = "layernorm";
  char name[64];
  size_t n = (size_t)N * C;
  /* A large shift makes a one-pass variance visibly wrong. */
  float *inp = randn(n, 2.0f, 3.0f), *weight = randn((size_t)C, 1.0f, 1.0f), *bias = randn((size_t)C, 1.0f, 0.0f);
  float *out = randn(n, 1.0f, 0.0f), *mean = randn((size_t)N, 1.0f, 0.0f), *rstd = randn((size_t)N, 1.0f, 0.0f);
  float *dout = randn(n, 1.0f, 0.0f), *dinp0 = randn(n, 1.0f, 0.0f);
  float *dweight0 = randn((size_t)C, 1.0f, 0.0f), *dbias0 = randn((size_t)C, 1.0f, 0.0f);
  float *dinp = copy(dinp0, n), *dweight = copy(dweight0, (size_t)C), *dbias = copy(dbias0, (size_t)C);
  nn_layernorm_forward(&cpu, f2(out, N, C), f1(mean, N), f1(rstd, N), f2(inp, N, C), f1(weight, C), f1(bias, C));
  nn_layernorm_backward(&cpu, f2(dinp, N, C), f1(dweight, C), f1(dbias, C), f2(dout, N, C), f2(inp, N, C),
                        f1(weight, C), f1(mean, N), f1(rstd, N));
  W(inp, DIMS(N, C));
  W(weight, DIMS(C));
  W(bias, DIMS(C));
  W(out, DIMS(N, C));
  W(mean, DIMS(N));
  W(rstd, DIMS(N));
  W(dout, DIMS(N, C));
  W(dinp0, DIMS(N, C));
  W(dweight0, DIMS(C));
  W(dbias0, DIMS(C));
  W(dinp, DIMS(N, C));
  W(dweight, DIMS(C));
  W(dbias, DIMS(C));
  free(inp), free(weight), free(bias), free(out), free(mean), free(rstd), free(dout);
  free(dinp0), free(dweight0), free(dbias0), free(dinp), free(dweight), free(dbias);
}

/* with_bias = 0 passes NULL for bias and dbias, the path of the bias-free LM head.
 * NN_GRAD_SET overwrites a dinp that holds random values: the file's dinp0 is then 0, so
 * the check's dinp0 + the gradient is the gradient alone. */
static void test_matmul(const char *kernel, int N, int C, int OC, int with_bias, enum nn_grad mode) {
  char name[64];
  float *inp = randn((size_t)N * C, 1.0f, 0.0f), *weight = randn((size_t)OC * C, 1.0f, 0.0f);
  float *bias = with_bias ? randn((size_t)OC, 1.0f, 0.0f) : NULL;
  float *out = randn((size_t)N * OC, 1.0f, 0.0f), *dout = randn((size_t)N * OC, 1.0f, 0.0f);
  float *dinp0 = randn((size_t)N * C, 1.0f, 0.0f), *dweight0 = randn((size_t)OC * C, 1.0f, 0.0f);
  float *dbias0 = randn((size_t)OC, 1.0f, 0.0f);
  float *dinp = copy(dinp0, (size_t)N * C), *dweight = copy(dweight0, (size_t)OC * C);
  float *dbias = copy(dbias0, (size_t)OC);
  nn_matmul_forward(&cpu, f2(out, N, OC), f2(inp, N, C), f2(weight, OC, C), with_bias ? f1(bias, OC) : TENSOR_NONE);
  nn_matmul_backward(&cpu, f2(dinp, N, C), mode, f2(dweight, OC, C), with_bias ? f1(dbias, OC) : TENSOR_NONE,
                     f2(dout, N, OC), f2(inp, N, C), f2(weight, OC, C));
  if (mode == NN_GRAD_SET) memset(dinp0, 0, (size_t)N * C * sizeof *dinp0);
  W(inp, DIMS(N, C));
  W(weight, DIMS(OC, C));
  if (with_bias) {
    W(bias, DIMS(OC));
    W(dbias0, DIMS(OC));
    W(dbias, DIMS(OC));
  }
  W(out, DIMS(N, OC));
  W(dout, DIMS(N, OC));
  W(dinp0, DIMS(N, C));
  W(dweight0, DIMS(OC, C));
  W(dinp, DIMS(N, C));
  W(dweight, DIMS(OC, C));
  free(inp), free(weight), free(bias), free(out), free(dout), free(dinp0), free(dweight0), free(dbias0);
  free(dinp), free(dweight), free(dbias);
}

/* NN_GRAD_SET as in test_matmul. */
static void test_attention(const char *kernel, int B, int T, int C, int NH, enum nn_grad mode) {
  char name[64];
  size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C, nlse = (size_t)B * NH * T;
  float *qkv = randn(nqkv, 1.0f, 0.0f), *out = randn(nout, 1.0f, 0.0f), *lse = randn(nlse, 1.0f, 0.0f);
  float *dout = randn(nout, 1.0f, 0.0f), *dqkv0 = randn(nqkv, 1.0f, 0.0f), *dqkv = copy(dqkv0, nqkv);
  float sizes[4] = {(float)B, (float)T, (float)C, (float)NH};
  nn_attention_forward(&cpu, f2(out, B * T, C), f3(lse, B, NH, T), f2(qkv, B * T, 3 * C));
  nn_attention_backward(&cpu, f2(dqkv, B * T, 3 * C), mode, f2(dout, B * T, C), f2(qkv, B * T, 3 * C),
                        f2(out, B * T, C), f3(lse, B, NH, T));
  if (mode == NN_GRAD_SET) memset(dqkv0, 0, nqkv * sizeof *dqkv0);
  W(sizes, DIMS(4));
  W(qkv, DIMS(B, T, 3 * C));
  W(out, DIMS(B, T, C));
  W(lse, DIMS(B, NH, T));
  W(dout, DIMS(B, T, C));
  W(dqkv0, DIMS(B, T, 3 * C));
  W(dqkv, DIMS(B, T, 3 * C));
  free(qkv), free(out), free(lse), free(dout), free(dqkv0), free(dqkv);
}

/* NN_GRAD_SET as in test_matmul. */
static void test_gelu(const char *kernel, int N, enum nn_grad mode) {
  char name[64];
  /* Scale 3 reaches the tails, where tanh saturates. */
  float *inp = randn((size_t)N, 3.0f, 0.0f), *out = randn((size_t)N, 1.0f, 0.0f);
  float *dout = randn((size_t)N, 1.0f, 0.0f), *dinp0 = randn((size_t)N, 1.0f, 0.0f), *dinp = copy(dinp0, (size_t)N);
  nn_gelu_forward(&cpu, f1(out, N), f1(inp, N));
  nn_gelu_backward(&cpu, f1(dinp, N), mode, f1(inp, N), f1(dout, N));
  if (mode == NN_GRAD_SET) memset(dinp0, 0, (size_t)N * sizeof *dinp0);
  W(inp, DIMS(N));
  W(out, DIMS(N));
  W(dout, DIMS(N));
  W(dinp0, DIMS(N));
  W(dinp, DIMS(N));
  free(inp), free(out), free(dout), free(dinp0), free(dinp);
}

/* GELU's negative tail, x from -8 to -1, where 1 + tanh u cancels: the check holds the
 * output and the gradient to a relative error, not an absolute one. */
static void test_gelu_tail(const char *kernel, int N) {
  char name[64];
  float *inp = fsdp_xmalloc((size_t)N * sizeof *inp), *out = fsdp_xmalloc((size_t)N * sizeof *out);
  float *dout = fsdp_xmalloc((size_t)N * sizeof *dout), *dinp = fsdp_xmalloc((size_t)N * sizeof *dinp);
  for (int i = 0; i < N; i++) inp[i] = -8.0f + 7.0f * (float)i / (float)(N - 1), dout[i] = 1.0f;
  nn_gelu_forward(&cpu, f1(out, N), f1(inp, N));
  nn_gelu_backward(&cpu, f1(dinp, N), NN_GRAD_SET, f1(inp, N), f1(dout, N));
  W(inp, DIMS(N));
  W(out, DIMS(N));
  W(dinp, DIMS(N));
  free(inp), free(out), free(dout), free(dinp);
}

/* The fused classifier on rows of Vp logits whose last Vp - V columns are padding, set
 * far above the rest (were they in the softmax, they would take all of it): the losses
 * alone (the model's forward), dlogits into another buffer, and both in place (the
 * model's backward). */
static void test_classifier(const char *kernel, int N, int V, int Vp) {
  char name[64];
  size_t n = (size_t)N * Vp;
  /* Scale 10 gives near-one-hot rows, where an unstable softmax overflows. */
  float *logits = randn(n, 10.0f, 0.0f), *losses = randn((size_t)N, 1.0f, 0.0f), *dlogits = randn(n, 1.0f, 0.0f);
  for (size_t i = 0; i < n; i++)
    if ((int)(i % (size_t)Vp) >= V) logits[i] = 1000.0f;
  float *inplace = copy(logits, n), *inplace_losses = randn((size_t)N, 1.0f, 0.0f);
  int *targets = randint((size_t)N, V);
  float dloss[1] = {1.0f / (float)N}, vocab[1] = {(float)V};
  struct tensor target_ids = tensor_1d(targets, DTYPE_I32, (size_t)N);
  nn_classifier(&cpu, TENSOR_NONE, f1(losses, N), f2(logits, N, Vp), target_ids, V, 0.0f);
  nn_classifier(&cpu, f2(dlogits, N, Vp), TENSOR_NONE, f2(logits, N, Vp), target_ids, V, dloss[0]);
  nn_classifier(&cpu, f2(inplace, N, Vp), f1(inplace_losses, N), f2(inplace, N, Vp), target_ids, V, dloss[0]);
  W(logits, DIMS(N, Vp));
  snprintf(name, sizeof name, "%s/targets", kernel);
  tensor_file_write_ints(out_file, name, targets, DIMS(N));
  W(vocab, DIMS(1));
  W(dloss, DIMS(1));
  W(losses, DIMS(N));
  W(dlogits, DIMS(N, Vp));
  W(inplace, DIMS(N, Vp));
  W(inplace_losses, DIMS(N));
  free(logits), free(losses), free(dlogits), free(inplace), free(inplace_losses), free(targets);
}

static void test_rmsnorm(const char *kernel, int N, int C, float shift, float eps) {
  char name[64];
  size_t n = (size_t)N * C;
  float *inp = randn(n, 2.0f, shift), *weight = randn((size_t)C, 1.0f, 1.0f);
  float *out = randn(n, 1.0f, 0.0f), *rstd = randn((size_t)N, 1.0f, 0.0f);
  float *dout = randn(n, 1.0f, 0.0f), *dinp0 = randn(n, 1.0f, 0.0f), *dweight0 = randn((size_t)C, 1.0f, 0.0f);
  float *dinp = copy(dinp0, n), *dweight = copy(dweight0, (size_t)C);
  float params[1] = {eps};
  nn_rmsnorm_forward(&cpu, f2(out, N, C), f1(rstd, N), f2(inp, N, C), f1(weight, C), eps);
  nn_rmsnorm_backward(&cpu, f2(dinp, N, C), f1(dweight, C), f2(dout, N, C), f2(inp, N, C), f1(weight, C),
                      f1(rstd, N));
  W(params, DIMS(1));
  W(inp, DIMS(N, C));
  W(weight, DIMS(C));
  W(out, DIMS(N, C));
  W(rstd, DIMS(N));
  W(dout, DIMS(N, C));
  W(dinp0, DIMS(N, C));
  W(dweight0, DIMS(C));
  W(dinp, DIMS(N, C));
  W(dweight, DIMS(C));
  free(inp), free(weight), free(out), free(rstd), free(dout), free(dinp0), free(dweight0), free(dinp), free(dweight);
}

/* The table has maxT rows, more than the T the ops read, so that a long one shows
 * the angles' float rounding; the forward also runs in place, as q and k are rotated. */
static void test_rope(const char *kernel, int B, int T, int H, int hd, int maxT, struct nn_rope rope) {
  char name[64];
  size_t n = (size_t)B * T * H * hd;
  float *table = randn((size_t)maxT * hd, 1.0f, 0.0f);
  float *inp = randn(n, 1.0f, 0.0f), *out = randn(n, 1.0f, 0.0f), *inplace = copy(inp, n);
  float *dout = randn(n, 1.0f, 0.0f), *dinp0 = randn(n, 1.0f, 0.0f), *dinp = copy(dinp0, n);
  float params[5] = {rope.theta, rope.factor, rope.low_freq_factor, rope.high_freq_factor,
                     (float)rope.original_max_position_embeddings};
  struct tensor tab = f2(table, maxT, hd);
  struct tensor x4 = tensor_4d(inp, DTYPE_F32, (size_t)B, (size_t)T, (size_t)H, (size_t)hd);
  struct tensor inplace4 = tensor_4d(inplace, DTYPE_F32, (size_t)B, (size_t)T, (size_t)H, (size_t)hd);
  struct tensor dout4 = tensor_4d(dout, DTYPE_F32, (size_t)B, (size_t)T, (size_t)H, (size_t)hd);
  nn_rope_table(&cpu, tab, &rope);
  nn_rope_forward(&cpu, f1(out, (int)n), x4, tab);
  nn_rope_forward(&cpu, inplace4, inplace4, tab);
  nn_rope_backward(&cpu, f1(dinp, (int)n), dout4, tab);
  W(params, DIMS(5));
  W(table, DIMS(maxT, hd));
  W(inp, DIMS(B, T, H, hd));
  W(out, DIMS(B, T, H, hd));
  W(inplace, DIMS(B, T, H, hd));
  W(dout, DIMS(B, T, H, hd));
  W(dinp0, DIMS(B, T, H, hd));
  W(dinp, DIMS(B, T, H, hd));
  free(table), free(inp), free(out), free(inplace), free(dout), free(dinp0), free(dinp);
}

/* NN_GRAD_SET as in test_matmul. */
static void test_swiglu(const char *kernel, int N, int F, enum nn_grad mode) {
  char name[64];
  size_t n = (size_t)N * F;
  /* Scale 4 reaches the tails, where the sigmoid saturates. */
  float *gate = randn(n, 4.0f, 0.0f), *up = randn(n, 1.0f, 0.0f), *out = randn(n, 1.0f, 0.0f);
  float *dout = randn(n, 1.0f, 0.0f), *dgate0 = randn(n, 1.0f, 0.0f), *dup0 = randn(n, 1.0f, 0.0f);
  float *dgate = copy(dgate0, n), *dup = copy(dup0, n);
  nn_swiglu_forward(&cpu, f2(out, N, F), f2(gate, N, F), f2(up, N, F));
  nn_swiglu_backward(&cpu, f2(dgate, N, F), f2(dup, N, F), mode, f2(dout, N, F), f2(gate, N, F), f2(up, N, F));
  if (mode == NN_GRAD_SET) memset(dgate0, 0, n * sizeof *dgate0), memset(dup0, 0, n * sizeof *dup0);
  W(gate, DIMS(N, F));
  W(up, DIMS(N, F));
  W(out, DIMS(N, F));
  W(dout, DIMS(N, F));
  W(dgate0, DIMS(N, F));
  W(dup0, DIMS(N, F));
  W(dgate, DIMS(N, F));
  W(dup, DIMS(N, F));
  free(gate), free(up), free(out), free(dout), free(dgate0), free(dup0), free(dgate), free(dup);
}

/* with_dq = 0 passes TENSOR_NONE for dq: dk and dv must come out the same. NN_GRAD_SET as
 * in test_matmul. */
static void test_gqa_attention(const char *kernel, int B, int T, int NH, int NKV, int hd, int with_dq,
                               enum nn_grad mode) {
  char name[64];
  size_t nq = (size_t)B * T * NH * hd, nkv = (size_t)B * T * NKV * hd, nlse = (size_t)B * NH * T;
  float *q = randn(nq, 1.0f, 0.0f), *k = randn(nkv, 1.0f, 0.0f), *v = randn(nkv, 1.0f, 0.0f);
  float *out = randn(nq, 1.0f, 0.0f), *lse = randn(nlse, 1.0f, 0.0f), *dout = randn(nq, 1.0f, 0.0f);
  float *dq0 = randn(nq, 1.0f, 0.0f), *dk0 = randn(nkv, 1.0f, 0.0f), *dv0 = randn(nkv, 1.0f, 0.0f);
  float *dq = copy(dq0, nq), *dk = copy(dk0, nkv), *dv = copy(dv0, nkv);
  struct tensor q4 = tensor_4d(q, DTYPE_F32, (size_t)B, (size_t)T, (size_t)NH, (size_t)hd);
  struct tensor k4 = tensor_4d(k, DTYPE_F32, (size_t)B, (size_t)T, (size_t)NKV, (size_t)hd);
  struct tensor v4 = tensor_4d(v, DTYPE_F32, (size_t)B, (size_t)T, (size_t)NKV, (size_t)hd);
  nn_gqa_attention_forward(&cpu, f2(out, B * T, NH * hd), f3(lse, B, NH, T), q4, k4, v4);
  nn_gqa_attention_backward(&cpu, with_dq ? f1(dq, (int)nq) : TENSOR_NONE, f1(dk, (int)nkv), f1(dv, (int)nkv), mode,
                            f2(dout, B * T, NH * hd), q4, k4, v4, f2(out, B * T, NH * hd), f3(lse, B, NH, T));
  if (mode == NN_GRAD_SET) {
    memset(dq0, 0, nq * sizeof *dq0);
    memset(dk0, 0, nkv * sizeof *dk0), memset(dv0, 0, nkv * sizeof *dv0);
  }
  W(q, DIMS(B, T, NH, hd));
  W(k, DIMS(B, T, NKV, hd));
  W(v, DIMS(B, T, NKV, hd));
  W(out, DIMS(B, T, NH * hd));
  W(lse, DIMS(B, NH, T));
  W(dout, DIMS(B, T, NH * hd));
  if (with_dq) {
    W(dq0, DIMS(B, T, NH, hd));
    W(dq, DIMS(B, T, NH, hd));
  }
  W(dk0, DIMS(B, T, NKV, hd));
  W(dv0, DIMS(B, T, NKV, hd));
  W(dk, DIMS(B, T, NKV, hd));
  W(dv, DIMS(B, T, NKV, hd));
  free(q), free(k), free(v), free(out), free(lse), free(dout), free(dq0), free(dk0), free(dv0);
  free(dq), free(dk), free(dv);
}
/* n new queries against a cache of L positions (the new ones last). */
static void test_cached_attention(const char *kernel, int n, int L, int NH, int NKV, int hd) {
  char name[64];
  size_t nq = (size_t)n * NH * hd, nkv = (size_t)L * NKV * hd;
  float *q = randn(nq, 1.0f, 0.0f), *k = randn(nkv, 1.0f, 0.0f), *v = randn(nkv, 1.0f, 0.0f);
  float *out = randn(nq, 1.0f, 0.0f);
  nn_cached_attention_forward(&cpu, f2(out, n, NH * hd), f3(q, n, NH, hd), f3(k, L, NKV, hd), f3(v, L, NKV, hd));
  W(q, DIMS(n, NH, hd));
  W(k, DIMS(L, NKV, hd));
  W(v, DIMS(L, NKV, hd));
  W(out, DIMS(n, NH * hd));
  free(q), free(k), free(v), free(out);
}
/* The truncated normal beside the plain one from the same counters: where the plain
 * value is in bounds the two are equal, elsewhere the truncated one was redrawn. */
static void test_init_trunc_normal(size_t n, float std, float bound) {
  const char *kernel = "init_trunc_normal";
  char name[64];
  uint64_t stream = next_stream++, first = 1000;
  float *normal = fsdp_xmalloc(n * sizeof(float)), *x = fsdp_xmalloc(n * sizeof(float));
  nn_init_normal(&cpu, f1(normal, (int)n), SEED, stream, first, std);
  nn_init_trunc_normal(&cpu, f1(x, (int)n), SEED, stream, first, std, bound);
  float params[] = {std, bound};
  W(params, DIMS(2));
  W(normal, DIMS((int)n));
  W(x, DIMS((int)n));
  free(normal), free(x);
}
#undef W

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s OUTPUT.bin\n", argv[0]);
    return 2;
  }
  out_file = tensor_file_create(argv[1]);
  cpu = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "kernels")};
  int B = 2, T = 5, C = 12, NH = 3, OC = 20, V = 11;
  test_encoder("encoder", B, T, C, V, T + 2, 1);
  test_encoder("encoder_nopos", B, T, C, V, T + 2, 0);
  test_layernorm(B * T, C);
  test_matmul("matmul", B * T, C, OC, 1, NN_GRAD_ADD);
  test_matmul("matmul_nobias", B * T, C, OC, 0, NN_GRAD_ADD);
  test_matmul("matmul_set", B * T, C, OC, 1, NN_GRAD_SET);
  test_attention("attention", B, T, C, NH, NN_GRAD_ADD);
  test_attention("attention_long", 3, 37, 30, 5, NN_GRAD_ADD);
  test_attention("attention_tiles", 2, 150, 32, 2, NN_GRAD_ADD); /* three tiles, the last partial */
  test_attention("attention_blocks", 1, 300, 32, 2, NN_GRAD_ADD); /* two key blocks, the last partial */
  test_attention("attention_set", 2, 150, 32, 2, NN_GRAD_SET);
  test_gelu("gelu", B * T * 4 * C, NN_GRAD_ADD);
  test_gelu("gelu_set", B * T * 4 * C, NN_GRAD_SET);
  test_gelu_tail("gelu_tail", 701);
  test_classifier("classifier", B * T, V, V);
  test_classifier("classifier_padded", B * T, V - 5, V + 3);
  /* 131 columns: three blocks of the weight gradient, the last one short. An offset of
   * 40 makes every row's mean square large next to its spread. */
  test_rmsnorm("rmsnorm", B * T, 131, 0.0f, 1e-5f);
  test_rmsnorm("rmsnorm_offset", 7, 67, 40.0f, 1e-6f);
  struct nn_rope plain = {.theta = 10000.0f};
  struct nn_rope llama31 = {500000.0f, 8.0f, 1.0f, 4.0f, 8192};
  test_rope("rope", B, T, NH, 6, T + 3, plain);
  /* hd 16 puts f_i in all three of the scaling's bands; 9000 rows pass L = 8192. */
  test_rope("rope_scaled", 3, 7, 2, 16, 9000, llama31);
  test_swiglu("swiglu", B * T, 37, NN_GRAD_ADD);
  test_swiglu("swiglu_set", B * T, 37, NN_GRAD_SET);
  test_gqa_attention("gqa_attention", B, T, 6, 2, 5, 1, NN_GRAD_ADD);
  test_gqa_attention("gqa_attention_mha", B, T, NH, NH, 4, 1, NN_GRAD_ADD);
  test_gqa_attention("gqa_attention_long", 3, 37, 8, 2, 7, 1, NN_GRAD_ADD);
  test_gqa_attention("gqa_attention_tiles", 1, 135, 4, 2, 16, 1, NN_GRAD_ADD);
  test_gqa_attention("gqa_attention_tiles_nodq", 1, 135, 4, 1, 16, 0, NN_GRAD_ADD);
  test_gqa_attention("gqa_attention_blocks", 1, 300, 4, 2, 16, 1, NN_GRAD_ADD);
  test_gqa_attention("gqa_attention_blocks_set", 1, 300, 4, 2, 16, 1, NN_GRAD_SET);
  test_gqa_attention("gqa_attention_nodq", B, T, 6, 3, 5, 0, NN_GRAD_ADD);
  test_cached_attention("cached_attention_step", 1, 9, 6, 2, 5);
  test_cached_attention("cached_attention_chunk", 4, 13, 6, 3, 4);
  test_cached_attention("cached_attention_prefill", 7, 7, 4, 4, 8);
  test_cached_attention("cached_attention_long", 3, 140, 4, 2, 16);
  /* Bounds of 2 std: one value in 22 is redrawn. */
  test_init_trunc_normal(20000, 0.5f, 1.0f);
  tensor_file_close(out_file);
  return 0;
}
