/* GPT-2's cuda layer kernels (src/nn/cuda) against their CPU twins (src/nn/cpu), in fp32,
 * bf16 and fp16, at two shapes: one whose sizes are multiples of 8 (the path a real model
 * takes: cuBLASLt's aligned algorithms, whole warps) and an odd one (partial warps and
 * blocks, rows and heads at 2- or 4-byte alignment, a bias cuBLASLt may refuse to fuse).
 *
 * The inputs are random, rounded to the dtype; the CPU computes in fp32 on the rounded
 * values, the GPU in the dtype (fp32 accumulation, 16-bit storage). An element passes when
 * |cuda - cpu| <= tol * (|cpu| + rms), rms the root mean square of the CPU's result (so
 * that an element near zero after cancellation is judged at the scale of its terms), with
 *   fp32: 0 (bit for bit) for the encoder and the residual, whose sums the GPU forms in
 *         the CPU's order; 1e-5 for the rest (sums in another order, CUDA's expf and
 *         tanhf, cuBLASLt in pure fp32: CUBLAS_COMPUTE_32F, no TF32);
 *   16-bit: 1e-2 (each stored value rounded once, 2^-9 relative for bf16), 2e-2 for
 *         attention, whose 16-bit side rounds the probabilities before p @ v and dv and
 *         the scores' gradient before dq and dk, as FlashAttention does (the CPU twin,
 *         in fp32 here, rounds nothing).
 * LayerNorm's parameter gradients, computed twice on the GPU, must be the same bits.
 * Each check prints its largest error in those units. Exits 77 (ctest: skipped) where
 * there is no GPU. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/nn.h"
#include "fsdp/rng.h"
#include "fsdp/stream.h"

enum { SKIP = 77 };
static const uint64_t SEED = 20251124;

static struct device *gpu;
static struct nn_ctx cpu_ctx, gpu_ctx;
static uint64_t next_stream;
static int checks, failures;

/* A tensor's data on both sides: the CPU's fp32 copy (rounded to the dtype) and the GPU's
 * in the dtype. */
struct pair {
  enum dtype d;
  size_t n;
  float *cpu;
  void *gpu;
};

static void upload(struct pair *p) {
  size_t bytes = p->n * dtype_size(p->d);
  void *host = fsdp_xmalloc(bytes);
  if (p->d == DTYPE_F32)
    memcpy(host, p->cpu, bytes);
  else
    dtype_pack(p->d, p->cpu, host, p->n);
  device_copy_to_device(gpu_ctx.stream, p->gpu, host, bytes);
  stream_synchronize(gpu_ctx.stream);
  free(host);
}

/* The values x (n of them), rounded to d, on both sides. */
static struct pair pair_of(enum dtype d, const float *x, size_t n) {
  struct pair p = {d, n, fsdp_xmalloc(n * sizeof(float)), device_alloc(gpu, n * dtype_size(d), MEM_OTHER,
                                                                          gpu_ctx.stream)};
  memcpy(p.cpu, x, n * sizeof(float));
  dtype_round(d, p.cpu, n);
  upload(&p);
  return p;
}

static struct pair random_pair(enum dtype d, size_t n, float scale) {
  uint64_t stream = next_stream++;
  float *x = fsdp_xmalloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(SEED, stream, i);
  struct pair p = pair_of(d, x, n);
  free(x);
  return p;
}

static void release(struct pair *p) {
  free(p->cpu);
  device_free(gpu, p->gpu, gpu_ctx.stream);
}

static struct tensor cpu1(const struct pair *p) { return tensor_1d(p->cpu, DTYPE_F32, p->n); }
static struct tensor gpu1(const struct pair *p) { return tensor_1d(p->gpu, p->d, p->n); }
static struct tensor cpu2(const struct pair *p, size_t cols) {
  return tensor_2d(p->cpu, DTYPE_F32, p->n / cols, cols);
}
static struct tensor gpu2(const struct pair *p, size_t cols) { return tensor_2d(p->gpu, p->d, p->n / cols, cols); }

/* Token ids in [0, V), on the GPU; host keeps them. */
static void *tokens(int *host, size_t n, int V) {
  uint64_t stream = next_stream++;
  for (size_t i = 0; i < n; i++) {
    uint32_t r[4];
    philox4x32(SEED, stream, i, r);
    host[i] = (int)(r[0] % (uint32_t)V);
  }
  void *g = device_alloc(gpu, n * sizeof(int), MEM_OTHER, gpu_ctx.stream);
  device_copy_to_device(gpu_ctx.stream, g, host, n * sizeof(int));
  return g;
}

/* The GPU's values of p, widened to fp32, once the work launched so far is done. */
static float *download(const struct pair *p) {
  size_t bytes = p->n * dtype_size(p->d);
  void *host = fsdp_xmalloc(bytes);
  device_copy_to_host(gpu_ctx.stream, host, p->gpu, bytes);
  stream_synchronize(gpu_ctx.stream);
  if (p->d == DTYPE_F32) return host;
  float *x = fsdp_xmalloc(p->n * sizeof *x);
  dtype_unpack(p->d, host, x, p->n);
  free(host);
  return x;
}

struct tolerance {
  double f32, f16; /* for fp32; for bf16 and fp16 */
};
static const struct tolerance EXACT = {0.0, 1e-2}, CLOSE = {1e-5, 1e-2}, ATTENTION = {1e-5, 2e-2};

static void expect(const char *shape, const char *what, const struct pair *p, struct tolerance tol) {
  checks++;
  double rtol = p->d == DTYPE_F32 ? tol.f32 : tol.f16;
  float *got = download(p);
  double squares = 0.0, worst = 0.0;
  for (size_t i = 0; i < p->n; i++) squares += (double)p->cpu[i] * p->cpu[i];
  double rms = sqrt(squares / (double)p->n);
  size_t bad = p->n;
  for (size_t i = 0; i < p->n; i++) {
    double err = fabs((double)got[i] - p->cpu[i]), scale = fabs(p->cpu[i]) + rms;
    if (!(err <= rtol * scale) && bad == p->n) bad = i;
    if (scale > 0.0 && err / scale > worst) worst = err / scale;
    if (err != err) worst = INFINITY;
  }
  printf("%-6s %-5s %-40s largest error %.3g (tolerance %.3g)\n", shape, dtype_name(p->d), what, worst, rtol);
  if (bad < p->n) {
    failures++;
    fprintf(stderr, "FAIL %s %s %s: element %zu of %zu: cpu %.9g, cuda %.9g\n", shape, dtype_name(p->d), what, bad,
            p->n, (double)p->cpu[bad], (double)got[bad]);
  }
  free(got);
}

/* The GPU's results in a and b, computed alike from the same values, are the same bits:
 * no atomics, sums in a fixed order. */
static void expect_same_bits(const char *shape, const char *what, const struct pair *a, const struct pair *b) {
  checks++;
  float *x = download(a), *y = download(b);
  int same = memcmp(x, y, a->n * sizeof *x) == 0;
  printf("%-6s %-5s %-40s %s\n", shape, dtype_name(a->d), what, same ? "the same bits twice" : "DIFFERENT");
  if (!same) {
    failures++;
    fprintf(stderr, "FAIL %s %s %s: two runs differ\n", shape, dtype_name(a->d), what);
  }
  free(x);
  free(y);
}

/* B sequences of T tokens, C channels in NH heads, a vocabulary of V. */
struct shape {
  const char *name;
  int B, T, C, NH, V;
};

/* A vocabulary of V tokens: smaller than N, tokens repeat and their rows of dwte add up;
 * past the counting sort's chunk of 1024 positions (src/nn/cuda/encoder.h), a token's
 * positions span chunks. */
static void test_encoder(const struct shape *s, int V, enum dtype d) {
  size_t N = (size_t)s->B * s->T, C = s->C;
  int *ids = fsdp_xmalloc(N * sizeof *ids);
  void *gids = tokens(ids, N, V);
  struct tensor cinp = tensor_2d(ids, DTYPE_I32, s->B, s->T), ginp = tensor_2d(gids, DTYPE_I32, s->B, s->T);
  struct pair wte = random_pair(d, (size_t)V * C, 0.5f), wpe = random_pair(d, (size_t)s->T * C, 0.5f);
  struct pair out = random_pair(d, N * C, 1.0f), out2 = random_pair(d, N * C, 1.0f);
  nn_encoder_forward(&cpu_ctx, cpu2(&out, C), cinp, cpu2(&wte, C), cpu2(&wpe, C));
  nn_encoder_forward(&gpu_ctx, gpu2(&out, C), ginp, gpu2(&wte, C), gpu2(&wpe, C));
  expect(s->name, "encoder_forward", &out, EXACT);
  nn_encoder_forward(&cpu_ctx, cpu2(&out2, C), cinp, cpu2(&wte, C), TENSOR_NONE);
  nn_encoder_forward(&gpu_ctx, gpu2(&out2, C), ginp, gpu2(&wte, C), TENSOR_NONE);
  expect(s->name, "encoder_forward without wpe", &out2, EXACT);

  /* out serves as dout; wte and wpe as the gradients they accumulate into. */
  nn_encoder_backward(&cpu_ctx, cpu2(&wte, C), cpu2(&wpe, C), cpu2(&out, C), cinp);
  nn_encoder_backward(&gpu_ctx, gpu2(&wte, C), gpu2(&wpe, C), gpu2(&out, C), ginp);
  char what[64];
  snprintf(what, sizeof what, "encoder_backward dwte (V %d)", V);
  expect(s->name, what, &wte, EXACT);
  expect(s->name, "encoder_backward dwpe", &wpe, EXACT);
  release(&out2);
  release(&out);
  release(&wpe);
  release(&wte);
  device_free(gpu, gids, gpu_ctx.stream);
  free(ids);
}

static void test_layernorm(const struct shape *s, enum dtype d) {
  size_t N = (size_t)s->B * s->T, C = s->C;
  struct pair inp = random_pair(d, N * C, 2.0f), weight = random_pair(d, C, 1.0f), bias = random_pair(d, C, 0.3f);
  /* An offset on every row: the variance must come from centred values. */
  for (size_t i = 0; i < N * C; i++) inp.cpu[i] += 3.0f;
  dtype_round(d, inp.cpu, N * C);
  upload(&inp);
  /* The statistics are fp32 in every dtype (the op's contract). */
  struct pair out = random_pair(d, N * C, 1.0f), mean = random_pair(DTYPE_F32, N, 1.0f);
  struct pair rstd = random_pair(DTYPE_F32, N, 1.0f);
  nn_layernorm_forward(&cpu_ctx, cpu2(&out, C), cpu1(&mean), cpu1(&rstd), cpu2(&inp, C), cpu1(&weight), cpu1(&bias));
  nn_layernorm_forward(&gpu_ctx, gpu2(&out, C), gpu1(&mean), gpu1(&rstd), gpu2(&inp, C), gpu1(&weight), gpu1(&bias));
  expect(s->name, "layernorm_forward out", &out, CLOSE);
  expect(s->name, "layernorm_forward mean", &mean, CLOSE);
  expect(s->name, "layernorm_forward rstd", &rstd, CLOSE);

  /* The backward from the same saved mean and rstd on both sides: the CPU's. */
  struct pair m = pair_of(DTYPE_F32, mean.cpu, N), r = pair_of(DTYPE_F32, rstd.cpu, N);
  struct pair dout = random_pair(d, N * C, 1.0f), dinp = random_pair(d, N * C, 1.0f);
  struct pair dweight = random_pair(d, C, 1.0f), dbias = random_pair(d, C, 1.0f);
  struct pair dweight2 = pair_of(d, dweight.cpu, C), dbias2 = pair_of(d, dbias.cpu, C);
  nn_layernorm_backward(&cpu_ctx, cpu2(&dinp, C), cpu1(&dweight), cpu1(&dbias), cpu2(&dout, C), cpu2(&inp, C),
                        cpu1(&weight), cpu1(&m), cpu1(&r));
  nn_layernorm_backward(&gpu_ctx, gpu2(&dinp, C), gpu1(&dweight), gpu1(&dbias), gpu2(&dout, C), gpu2(&inp, C),
                        gpu1(&weight), gpu1(&m), gpu1(&r));
  expect(s->name, "layernorm_backward dinp", &dinp, CLOSE);
  expect(s->name, "layernorm_backward dweight", &dweight, CLOSE);
  expect(s->name, "layernorm_backward dbias", &dbias, CLOSE);
  nn_layernorm_backward(&gpu_ctx, TENSOR_NONE, gpu1(&dweight2), gpu1(&dbias2), gpu2(&dout, C), gpu2(&inp, C),
                        gpu1(&weight), gpu1(&m), gpu1(&r));
  expect_same_bits(s->name, "layernorm_backward dweight", &dweight, &dweight2);
  expect_same_bits(s->name, "layernorm_backward dbias", &dbias, &dbias2);
  struct pair *all[] = {&inp, &weight, &bias, &out, &mean, &rstd, &m, &r, &dout, &dinp, &dweight, &dbias, &dweight2,
                        &dbias2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

/* The linear layers of a block: qkv (OC = 3C, with a bias), and, with bias_offset 1, a
 * bias one element past an aligned address, which cuBLASLt's epilogue may refuse (the
 * broadcast path then adds it). Without a bias, dinp is overwritten (NN_GRAD_SET, as the
 * models call it: beta 0), its random values ignored. */
static void test_matmul(const struct shape *s, enum dtype d, int OC, int with_bias, int bias_offset) {
  char what[96];
  size_t N = (size_t)s->B * s->T, C = s->C;
  const char *variant = !with_bias ? "no bias, dinp set" : bias_offset ? "bias misaligned" : "bias";
  enum nn_grad mode = with_bias ? NN_GRAD_ADD : NN_GRAD_SET;
  struct pair inp = random_pair(d, N * C, 1.0f), weight = random_pair(d, (size_t)OC * C, 0.2f);
  struct pair bias = random_pair(d, (size_t)OC + 1, 1.0f);
  struct tensor cbias = with_bias ? tensor_1d(bias.cpu + bias_offset, DTYPE_F32, OC) : TENSOR_NONE;
  struct tensor gbias = with_bias
                            ? tensor_1d((char *)bias.gpu + bias_offset * dtype_size(d), d, OC)
                            : TENSOR_NONE;
  struct pair out = random_pair(d, N * OC, 1.0f);
  nn_matmul_forward(&cpu_ctx, cpu2(&out, OC), cpu2(&inp, C), cpu2(&weight, C), cbias);
  nn_matmul_forward(&gpu_ctx, gpu2(&out, OC), gpu2(&inp, C), gpu2(&weight, C), gbias);
  snprintf(what, sizeof what, "matmul_forward (%s)", variant);
  expect(s->name, what, &out, CLOSE);

  struct pair dout = random_pair(d, N * OC, 1.0f), dinp = random_pair(d, N * C, 1.0f);
  struct pair dweight = random_pair(d, (size_t)OC * C, 1.0f);
  nn_matmul_backward(&cpu_ctx, cpu2(&dinp, C), mode, cpu2(&dweight, C), cbias, cpu2(&dout, OC), cpu2(&inp, C),
                     cpu2(&weight, C));
  nn_matmul_backward(&gpu_ctx, gpu2(&dinp, C), mode, gpu2(&dweight, C), gbias, gpu2(&dout, OC), gpu2(&inp, C),
                     gpu2(&weight, C));
  snprintf(what, sizeof what, "matmul_backward dinp (%s)", variant);
  expect(s->name, what, &dinp, CLOSE);
  snprintf(what, sizeof what, "matmul_backward dweight (%s)", variant);
  expect(s->name, what, &dweight, CLOSE);
  if (with_bias) {
    snprintf(what, sizeof what, "matmul_backward dbias (%s)", variant);
    expect(s->name, what, &bias, CLOSE);
  }
  struct pair *all[] = {&inp, &weight, &bias, &out, &dout, &dinp, &dweight};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

/* lse (B, NH, T), fp32 in every dtype. */
static struct tensor lse3(void *data, const struct shape *s) {
  return (struct tensor){data, DTYPE_F32, 3, {(size_t)s->B, (size_t)s->NH, (size_t)s->T}};
}

static void test_attention(const struct shape *s, enum dtype d) {
  size_t N = (size_t)s->B * s->T, C = s->C, nlse = (size_t)s->B * s->NH * s->T;
  struct pair qkv = random_pair(d, N * 3 * C, 1.0f), out = random_pair(d, N * C, 1.0f);
  struct pair lse = random_pair(DTYPE_F32, nlse, 1.0f);
  nn_attention_forward(&cpu_ctx, cpu2(&out, C), lse3(lse.cpu, s), cpu2(&qkv, 3 * C));
  nn_attention_forward(&gpu_ctx, gpu2(&out, C), lse3(lse.gpu, s), gpu2(&qkv, 3 * C));
  expect(s->name, "attention_forward lse", &lse, CLOSE);
  expect(s->name, "attention_forward out", &out, ATTENTION);

  /* The backward from the CPU's out (rounded) and lse on both sides. */
  struct pair o = pair_of(d, out.cpu, N * C), l = pair_of(DTYPE_F32, lse.cpu, nlse);
  struct pair dout = random_pair(d, N * C, 1.0f), dqkv = random_pair(d, N * 3 * C, 1.0f);
  nn_attention_backward(&cpu_ctx, cpu2(&dqkv, 3 * C), NN_GRAD_ADD, cpu2(&dout, C), cpu2(&qkv, 3 * C), cpu2(&o, C),
                        lse3(l.cpu, s));
  nn_attention_backward(&gpu_ctx, gpu2(&dqkv, 3 * C), NN_GRAD_ADD, gpu2(&dout, C), gpu2(&qkv, 3 * C), gpu2(&o, C),
                        lse3(l.gpu, s));
  expect(s->name, "attention_backward dqkv", &dqkv, ATTENTION);
  /* Then written over what each side holds. */
  nn_attention_backward(&cpu_ctx, cpu2(&dqkv, 3 * C), NN_GRAD_SET, cpu2(&dout, C), cpu2(&qkv, 3 * C), cpu2(&o, C),
                        lse3(l.cpu, s));
  nn_attention_backward(&gpu_ctx, gpu2(&dqkv, 3 * C), NN_GRAD_SET, gpu2(&dout, C), gpu2(&qkv, 3 * C), gpu2(&o, C),
                        lse3(l.gpu, s));
  expect(s->name, "attention_backward dqkv (set)", &dqkv, ATTENTION);
  struct pair *all[] = {&qkv, &out, &lse, &o, &l, &dout, &dqkv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

static void test_elementwise(const struct shape *s, enum dtype d) {
  size_t n = (size_t)s->B * s->T * 4 * s->C;
  struct pair x = random_pair(d, n, 2.0f), y = random_pair(d, n, 1.0f), out = random_pair(d, n, 1.0f);
  nn_gelu_forward(&cpu_ctx, cpu1(&out), cpu1(&x));
  nn_gelu_forward(&gpu_ctx, gpu1(&out), gpu1(&x));
  expect(s->name, "gelu_forward", &out, CLOSE);
  /* y serves as dout, out as the dinp it accumulates into, then the one it overwrites. */
  nn_gelu_backward(&cpu_ctx, cpu1(&out), NN_GRAD_ADD, cpu1(&x), cpu1(&y));
  nn_gelu_backward(&gpu_ctx, gpu1(&out), NN_GRAD_ADD, gpu1(&x), gpu1(&y));
  expect(s->name, "gelu_backward", &out, CLOSE);
  nn_gelu_backward(&cpu_ctx, cpu1(&out), NN_GRAD_SET, cpu1(&x), cpu1(&y));
  nn_gelu_backward(&gpu_ctx, gpu1(&out), NN_GRAD_SET, gpu1(&x), gpu1(&y));
  expect(s->name, "gelu_backward (set)", &out, CLOSE);
  /* Its negative tail, where 1 + tanh u cancels: the GPU must compute the CPU's form too
   * (its tanhf form was 0.3 off relative at x = -5, 1 from -6 on). */
  if (d == DTYPE_F32) {
    float *tail = fsdp_xmalloc(n * sizeof *tail);
    for (size_t i = 0; i < n; i++) tail[i] = -3.0f - 6.0f * (float)i / (float)n;
    struct pair t = pair_of(d, tail, n);
    free(tail);
    nn_gelu_forward(&cpu_ctx, cpu1(&out), cpu1(&t));
    nn_gelu_forward(&gpu_ctx, gpu1(&out), gpu1(&t));
    expect(s->name, "gelu_forward, x from -9 to -3", &out, CLOSE);
    nn_gelu_backward(&cpu_ctx, cpu1(&out), NN_GRAD_SET, cpu1(&t), cpu1(&y));
    nn_gelu_backward(&gpu_ctx, gpu1(&out), NN_GRAD_SET, gpu1(&t), gpu1(&y));
    expect(s->name, "gelu_backward, x from -9 to -3", &out, CLOSE);
    release(&t);
  }
  nn_residual_forward(&cpu_ctx, cpu1(&out), cpu1(&x), cpu1(&y));
  nn_residual_forward(&gpu_ctx, gpu1(&out), gpu1(&x), gpu1(&y));
  expect(s->name, "residual_forward", &out, EXACT);
  release(&out);
  release(&y);
  release(&x);
}

/* The vocabulary's V columns of rows of Vp: V + 3 rounded up to 8, as the model pads (the
 * kernel reads 16 bytes at once), or V + 1 (rows off 16 bytes: an element at a time). */
static void test_classifier(const struct shape *s, enum dtype d, size_t Vp) {
  size_t N = (size_t)s->B * s->T;
  int *ids = fsdp_xmalloc(N * sizeof *ids);
  void *gids = tokens(ids, N, s->V);
  struct tensor ctargets = tensor_1d(ids, DTYPE_I32, N), gtargets = tensor_1d(gids, DTYPE_I32, N);
  struct pair logits = random_pair(d, N * Vp, 3.0f), dlogits = random_pair(d, N * Vp, 1.0f);
  struct pair losses = random_pair(DTYPE_F32, N, 1.0f); /* fp32 in every dtype */
  float dloss = 1.0f / (float)N;
  char what[4][64];
  const char *names[4] = {"losses", "dlogits", "in place", "in place losses"};
  for (int i = 0; i < 4; i++) snprintf(what[i], sizeof what[i], "classifier %s, rows of %zu", names[i], Vp);
  nn_classifier(&cpu_ctx, TENSOR_NONE, cpu1(&losses), cpu2(&logits, Vp), ctargets, s->V, 0.0f);
  nn_classifier(&gpu_ctx, TENSOR_NONE, gpu1(&losses), gpu2(&logits, Vp), gtargets, s->V, 0.0f);
  expect(s->name, what[0], &losses, CLOSE);
  nn_classifier(&cpu_ctx, cpu2(&dlogits, Vp), TENSOR_NONE, cpu2(&logits, Vp), ctargets, s->V, dloss);
  nn_classifier(&gpu_ctx, gpu2(&dlogits, Vp), TENSOR_NONE, gpu2(&logits, Vp), gtargets, s->V, dloss);
  expect(s->name, what[1], &dlogits, CLOSE);
  /* In place, as the model's backward calls it. */
  nn_classifier(&cpu_ctx, cpu2(&logits, Vp), cpu1(&losses), cpu2(&logits, Vp), ctargets, s->V, dloss);
  nn_classifier(&gpu_ctx, gpu2(&logits, Vp), gpu1(&losses), gpu2(&logits, Vp), gtargets, s->V, dloss);
  expect(s->name, what[2], &logits, CLOSE);
  expect(s->name, what[3], &losses, CLOSE);
  struct pair *all[] = {&logits, &dlogits, &losses};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
  device_free(gpu, gids, gpu_ctx.stream);
  free(ids);
}

/* The classifier where the kernel once went wrong (the review of 2026-11-28): rows whose
 * first 4096 logits are -inf (every thread's first runs: a NaN sum dropped a thread's
 * finite terms, item 1), a row of a few finite logits, and a target in the padding
 * columns (-dloss written there, item 2); tests/cuda_classifier_test.c runs the same rows
 * through the kernel's functions on the CPU. */
static void test_classifier_edges(enum dtype d) {
  const int N = 4, V = 5000;
  const size_t Vp = 5008;
  float *x = fsdp_xmalloc(N * Vp * sizeof *x);
  uint64_t stream = next_stream++;
  for (size_t i = 0; i < N * Vp; i++) x[i] = 3.0f * rng_normal(SEED, stream, i);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4096; j++) x[i * Vp + j] = -INFINITY;
  for (int j = 0; j < V; j++)
    if (j % 97) x[2 * Vp + j] = -INFINITY;
  int ids[4] = {4500, 4999, 97, V + 3}; /* the last in the padding */
  void *gids = device_alloc(gpu, sizeof ids, MEM_OTHER, gpu_ctx.stream);
  device_copy_to_device(gpu_ctx.stream, gids, ids, sizeof ids);
  struct tensor ctargets = tensor_1d(ids, DTYPE_I32, N), gtargets = tensor_1d(gids, DTYPE_I32, N);
  struct pair logits = pair_of(d, x, N * Vp), dlogits = random_pair(d, N * Vp, 1.0f);
  struct pair losses = random_pair(DTYPE_F32, N, 1.0f);
  nn_classifier(&cpu_ctx, cpu2(&dlogits, Vp), cpu1(&losses), cpu2(&logits, Vp), ctargets, V, 0.25f);
  nn_classifier(&gpu_ctx, gpu2(&dlogits, Vp), gpu1(&losses), gpu2(&logits, Vp), gtargets, V, 0.25f);
  expect("edges", "classifier losses, -inf runs and a padding target", &losses, CLOSE);
  expect("edges", "classifier dlogits, -inf runs and a padding target", &dlogits, CLOSE);
  float *g = download(&dlogits);
  for (size_t j = V; j < Vp; j++) {
    checks++;
    if (g[3 * Vp + j] != 0.0f) {
      failures++;
      fprintf(stderr, "FAIL edges %s: classifier dlogits padding column %zu of the row whose target is there: %g\n",
              dtype_name(d), j, g[3 * Vp + j]);
      break;
    }
  }
  free(g);
  struct pair *all[] = {&logits, &dlogits, &losses};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
  device_free(gpu, gids, gpu_ctx.stream);
  free(x);
}

int main(void) {
  char why[256];
  if (!device_cuda_available(why, sizeof why)) {
    printf("nn_cuda_layers_test: skipped: no GPU to run on (%s)\n", why);
    return SKIP;
  }
  gpu = device_open(DEVICE_CUDA, DEVICE_CUDA);
  gpu_ctx = (struct nn_ctx){gpu, device_stream_create(gpu, "nn_cuda_layers_test")};
  cpu_ctx = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "nn_cuda_layers_test cpu")};

  static const struct shape SHAPES[] = {
      {"even", 2, 64, 128, 4, 1024},
      {"odd", 3, 37, 15, 3, 333},
      {"tiles", 1, 200, 256, 2, 512}, /* attention: head dim 128, four query tiles, the last partial */
      {"gpt2-heads", 2, 130, 256, 4, 300}, /* attention: GPT-2's head dim 64, three tiles, two batch rows */
  };
  static const enum dtype DTYPES[] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};
  for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++)
    for (size_t j = 0; j < sizeof DTYPES / sizeof DTYPES[0]; j++) {
      const struct shape *s = &SHAPES[i];
      enum dtype d = DTYPES[j];
      test_encoder(s, s->T / 2 + 1, d);
      test_layernorm(s, d);
      test_matmul(s, d, 3 * s->C, 1, 0);
      test_matmul(s, d, 3 * s->C, 1, 1);
      test_matmul(s, d, s->C, 0, 0);
      test_attention(s, d);
      test_elementwise(s, d);
      test_classifier(s, d, ((size_t)s->V + 3 + 7) / 8 * 8);
      test_classifier(s, d, (size_t)s->V + 1);
    }
  /* Many rows: the embedding's sort over several chunks (a token in most of them with 3
   * tokens, mostly empty rows with GPT-2's 50257) and the column sums over several splits
   * of rows, the last one shorter (src/nn/cuda/colsum.h). */
  static const struct shape LONG = {"long", 3, 1500, 40, 4, 333};
  for (size_t j = 0; j < sizeof DTYPES / sizeof DTYPES[0]; j++) {
    test_encoder(&LONG, 3, DTYPES[j]);
    test_encoder(&LONG, 751, DTYPES[j]);
    test_encoder(&LONG, 50257, DTYPES[j]);
    test_layernorm(&LONG, DTYPES[j]);
    test_matmul(&LONG, DTYPES[j], 3 * LONG.C, 1, 0);
  }
  /* GPT-2's vocabulary: a thread's running maximum moves over a dozen runs of a row. */
  static const struct shape VOCAB = {"vocab", 2, 3, 8, 1, 50257};
  for (size_t j = 0; j < sizeof DTYPES / sizeof DTYPES[0]; j++) {
    test_classifier(&VOCAB, DTYPES[j], 50304);
    test_classifier(&VOCAB, DTYPES[j], 50258);
    test_classifier_edges(DTYPES[j]);
  }
  /* The attention's tiling on a GPU whose blocks may have 99 KiB (sm_86, sm_89, sm_120),
   * whatever this one allows (FSDP_CUDA_SMEM_LIMIT): at head dim 128 in fp32 the other
   * side's tile 32 or 16 rows at a time, at 96 (CUDA cores in every dtype) 32 in the
   * backward, at 64 whole tiles. */
  setenv("FSDP_CUDA_SMEM_LIMIT", "101376", 1);
  static const struct shape SMALL_SMEM[] = {
      {"tiles, 99 KiB", 1, 200, 256, 2, 512},
      {"hd96, 99 KiB", 2, 150, 192, 2, 300},
      {"gpt2-heads, 99 KiB", 2, 130, 256, 4, 300},
  };
  for (size_t i = 0; i < sizeof SMALL_SMEM / sizeof SMALL_SMEM[0]; i++)
    for (size_t j = 0; j < sizeof DTYPES / sizeof DTYPES[0]; j++) test_attention(&SMALL_SMEM[i], DTYPES[j]);
  unsetenv("FSDP_CUDA_SMEM_LIMIT");
  stream_destroy(gpu_ctx.stream);
  stream_destroy(cpu_ctx.stream);
  device_close(gpu);
  printf("nn_cuda_layers_test: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
