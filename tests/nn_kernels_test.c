/* Runs every CPU layer kernel on small, awkward sizes and writes all inputs,
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

static void test_encoder(int B, int T, int C, int V, int maxT) {
  const char *kernel = "encoder";
  char name[64];
  int *inp = randint((size_t)B * T, V);
  float *wte = randn((size_t)V * C, 1.0f, 0.0f), *wpe = randn((size_t)maxT * C, 1.0f, 0.0f);
  float *out = randn((size_t)B * T * C, 1.0f, 0.0f), *dout = randn((size_t)B * T * C, 1.0f, 0.0f);
  float *dwte0 = randn((size_t)V * C, 1.0f, 0.0f), *dwpe0 = randn((size_t)maxT * C, 1.0f, 0.0f);
  float *dwte = copy(dwte0, (size_t)V * C), *dwpe = copy(dwpe0, (size_t)maxT * C);
  nn_encoder_forward(&cpu, f2(out, B * T, C), i2(inp, B, T), f2(wte, V, C), f2(wpe, maxT, C));
  nn_encoder_backward(&cpu, f2(dwte, V, C), f2(dwpe, maxT, C), f2(dout, B * T, C), i2(inp, B, T));
  tensor_file_write_ints(out_file, "encoder/inp", inp, DIMS(B, T));
  W(wte, DIMS(V, C));
  W(wpe, DIMS(maxT, C));
  W(out, DIMS(B, T, C));
  W(dout, DIMS(B, T, C));
  W(dwte0, DIMS(V, C));
  W(dwpe0, DIMS(maxT, C));
  W(dwte, DIMS(V, C));
  W(dwpe, DIMS(maxT, C));
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

/* with_bias = 0 passes NULL for bias and dbias, the path of the bias-free LM head. */
static void test_matmul(const char *kernel, int N, int C, int OC, int with_bias) {
  char name[64];
  float *inp = randn((size_t)N * C, 1.0f, 0.0f), *weight = randn((size_t)OC * C, 1.0f, 0.0f);
  float *bias = with_bias ? randn((size_t)OC, 1.0f, 0.0f) : NULL;
  float *out = randn((size_t)N * OC, 1.0f, 0.0f), *dout = randn((size_t)N * OC, 1.0f, 0.0f);
  float *dinp0 = randn((size_t)N * C, 1.0f, 0.0f), *dweight0 = randn((size_t)OC * C, 1.0f, 0.0f);
  float *dbias0 = randn((size_t)OC, 1.0f, 0.0f);
  float *dinp = copy(dinp0, (size_t)N * C), *dweight = copy(dweight0, (size_t)OC * C);
  float *dbias = copy(dbias0, (size_t)OC);
  nn_matmul_forward(&cpu, f2(out, N, OC), f2(inp, N, C), f2(weight, OC, C), with_bias ? f1(bias, OC) : TENSOR_NONE);
  nn_matmul_backward(&cpu, f2(dinp, N, C), f2(dweight, OC, C), with_bias ? f1(dbias, OC) : TENSOR_NONE,
                     f2(dout, N, OC), f2(inp, N, C), f2(weight, OC, C));
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

static void test_attention(const char *kernel, int B, int T, int C, int NH) {
  char name[64];
  size_t nqkv = (size_t)B * T * 3 * C, nout = (size_t)B * T * C, natt = (size_t)B * NH * T * T;
  float *qkv = randn(nqkv, 1.0f, 0.0f), *out = randn(nout, 1.0f, 0.0f), *att = randn(natt, 1.0f, 0.0f);
  float *dout = randn(nout, 1.0f, 0.0f), *dqkv0 = randn(nqkv, 1.0f, 0.0f), *dqkv = copy(dqkv0, nqkv);
  float sizes[4] = {(float)B, (float)T, (float)C, (float)NH};
  struct tensor att4 = tensor_4d(att, DTYPE_F32, (size_t)B, (size_t)NH, (size_t)T, (size_t)T);
  nn_attention_forward(&cpu, f2(out, B * T, C), att4, f2(qkv, B * T, 3 * C));
  nn_attention_backward(&cpu, f2(dqkv, B * T, 3 * C), f2(dout, B * T, C), f2(qkv, B * T, 3 * C), att4);
  W(sizes, DIMS(4));
  W(qkv, DIMS(B, T, 3 * C));
  W(out, DIMS(B, T, C));
  W(att, DIMS(B, NH, T, T));
  W(dout, DIMS(B, T, C));
  W(dqkv0, DIMS(B, T, 3 * C));
  W(dqkv, DIMS(B, T, 3 * C));
  free(qkv), free(out), free(att), free(dout), free(dqkv0), free(dqkv);
}

static void test_gelu(int N) {
  const char *kernel = "gelu";
  char name[64];
  /* Scale 3 reaches the tails, where tanh saturates. */
  float *inp = randn((size_t)N, 3.0f, 0.0f), *out = randn((size_t)N, 1.0f, 0.0f);
  float *dout = randn((size_t)N, 1.0f, 0.0f), *dinp0 = randn((size_t)N, 1.0f, 0.0f), *dinp = copy(dinp0, (size_t)N);
  nn_gelu_forward(&cpu, f1(out, N), f1(inp, N));
  nn_gelu_backward(&cpu, f1(dinp, N), f1(inp, N), f1(dout, N));
  W(inp, DIMS(N));
  W(out, DIMS(N));
  W(dout, DIMS(N));
  W(dinp0, DIMS(N));
  W(dinp, DIMS(N));
  free(inp), free(out), free(dout), free(dinp0), free(dinp);
}

/* Also runs the forward in place (probs == logits), the way the model calls it. */
static void test_crossentropy(int N, int V) {
  const char *kernel = "crossentropy";
  char name[64];
  size_t n = (size_t)N * V;
  /* Scale 10 gives near-one-hot rows, where an unstable softmax overflows. */
  float *logits = randn(n, 10.0f, 0.0f), *probs = randn(n, 1.0f, 0.0f), *losses = randn((size_t)N, 1.0f, 0.0f);
  float *inplace = copy(logits, n), *inplace_losses = randn((size_t)N, 1.0f, 0.0f);
  int *targets = randint((size_t)N, V);
  float *dlogits0 = randn(n, 1.0f, 0.0f), *dlogits = copy(dlogits0, n);
  float dloss[1] = {1.0f / (float)N};
  struct tensor target_ids = tensor_1d(targets, DTYPE_I32, (size_t)N);
  nn_softmax_crossentropy_forward(&cpu, f2(probs, N, V), f1(losses, N), f2(logits, N, V), target_ids);
  nn_softmax_crossentropy_forward(&cpu, f2(inplace, N, V), f1(inplace_losses, N), f2(inplace, N, V), target_ids);
  nn_softmax_crossentropy_backward(&cpu, f2(dlogits, N, V), f2(probs, N, V), target_ids, dloss[0]);
  W(logits, DIMS(N, V));
  tensor_file_write_ints(out_file, "crossentropy/targets", targets, DIMS(N));
  W(probs, DIMS(N, V));
  W(losses, DIMS(N));
  W(inplace, DIMS(N, V));
  W(inplace_losses, DIMS(N));
  W(dloss, DIMS(1));
  W(dlogits0, DIMS(N, V));
  W(dlogits, DIMS(N, V));
  free(logits), free(probs), free(losses), free(inplace), free(inplace_losses), free(targets);
  free(dlogits0), free(dlogits);
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
  test_encoder(B, T, C, V, T + 2);
  test_layernorm(B * T, C);
  test_matmul("matmul", B * T, C, OC, 1);
  test_matmul("matmul_nobias", B * T, C, OC, 0);
  test_attention("attention", B, T, C, NH);
  test_attention("attention_long", 3, 37, 30, 5);
  test_gelu(B * T * 4 * C);
  test_crossentropy(B * T, V);
  tensor_file_close(out_file);
  return 0;
}
