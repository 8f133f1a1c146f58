/* Llama 3's cuda kernels (src/nn/cuda: rmsnorm, rope, swiglu, attention (grouped-query
 * and over a KV cache), init_trunc_normal) against their CPU twins (src/nn/cpu), on the same inputs, with
 * every layer op's tensors in fp32, bf16 and fp16 on the GPU. The CPU computes in fp32
 * on the values rounded to the dtype (as nn_compute_dtype has it); the GPU reads the
 * same 16-bit values, computes in fp32 and rounds what it stores. Backwards start from
 * nonzero gradients, to see that they accumulate.
 *
 * Tolerances, element by element: |cuda - cpu| <= rtol (|cpu| + max |cpu|) over the
 * tensor, rtol 1e-5 for fp32 (sums in another order; the max term stands for the
 * cancellations in a sum), 2^-8 for bf16 and 2^-10 for fp16 (twice the half ulp of the
 * one rounding a stored value takes). Tighter where the kernel promises more: RoPE's
 * rotation in fp32 is the CPU's to the bit; the RoPE table, whose fp64 pow, cos and sin
 * are CUDA's, within one ulp of the dtype (rope.cu); init_trunc_normal within one fp32
 * ulp (init_normal.cu, trunc_normal.cu), always within its bound, the same bits on
 * every run. Exits 77 (ctest: skipped) where there is no GPU. */
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
static const uint64_t SEED = 20241123;
static const enum dtype DTYPES[] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};

static struct device *gpu;
static struct nn_ctx cpu_ctx, gpu_ctx;
static uint64_t next_stream;
static int checks, failures;

__attribute__((format(printf, 2, 3))) static void fail(const char *what, const char *fmt, ...) {
  failures++;
  fprintf(stderr, "FAIL %s: ", what);
  va_list args;
  va_start(args, fmt);
  vfprintf(stderr, fmt, args);
  va_end(args);
  fputc('\n', stderr);
}

/* ---- operands: the CPU's fp32 values and the GPU's copy in the dtype ---- */

struct operand {
  float *cpu; /* rounded to dtype */
  void *gpu;
  size_t n;
  enum dtype dtype;
};

/* Takes values (n floats, malloc'd), rounds them to d, and copies them to the GPU in d. */
static struct operand upload(float *values, size_t n, enum dtype d) {
  dtype_round(d, values, n);
  size_t bytes = n * dtype_size(d);
  void *host = values;
  if (d != DTYPE_F32) {
    host = fsdp_xmalloc(bytes);
    dtype_pack(d, values, host, n);
  }
  void *dev = device_alloc(gpu, bytes, MEM_OTHER, gpu_ctx.stream);
  device_copy_to_device(gpu_ctx.stream, dev, host, bytes);
  stream_synchronize(gpu_ctx.stream);
  if (host != values) free(host);
  return (struct operand){values, dev, n, d};
}

static float *normals(size_t n, float scale) {
  uint64_t stream = next_stream++;
  float *x = fsdp_xmalloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(SEED, stream, i);
  return x;
}

static float *copy_of(const float *x, size_t n) {
  float *y = fsdp_xmalloc(n * sizeof *y);
  memcpy(y, x, n * sizeof *y);
  return y;
}

static struct operand random_operand(size_t n, enum dtype d, float scale) { return upload(normals(n, scale), n, d); }

/* Where an op writes its output, the CPU's side starting as zeros (the forwards overwrite). */
static struct operand output(size_t n, enum dtype d) { return upload(fsdp_xcalloc(n, sizeof(float)), n, d); }

/* The GPU's values as fp32, once the work launched before is done. */
static float *download(const struct operand *o) {
  size_t bytes = o->n * dtype_size(o->dtype);
  void *host = fsdp_xmalloc(bytes);
  device_copy_to_host(gpu_ctx.stream, host, o->gpu, bytes);
  stream_synchronize(gpu_ctx.stream);
  if (o->dtype == DTYPE_F32) return host;
  float *x = fsdp_xmalloc(o->n * sizeof *x);
  dtype_unpack(o->dtype, host, x, o->n);
  free(host);
  return x;
}

static void release(struct operand *o) {
  device_free(gpu, o->gpu, gpu_ctx.stream);
  free(o->cpu);
  *o = (struct operand){0};
}

/* The operand as each side's tensor, of the given shape. */
static struct tensor cpu1(const struct operand *o) { return tensor_1d(o->cpu, DTYPE_F32, o->n); }
static struct tensor gpu1(const struct operand *o) { return tensor_1d(o->gpu, o->dtype, o->n); }
static struct tensor cpu2(const struct operand *o, size_t cols) {
  return tensor_2d(o->cpu, DTYPE_F32, o->n / cols, cols);
}
static struct tensor gpu2(const struct operand *o, size_t cols) {
  return tensor_2d(o->gpu, o->dtype, o->n / cols, cols);
}
static struct tensor t3(void *data, enum dtype d, size_t d0, size_t d1, size_t d2) {
  return (struct tensor){data, d, 3, {d0, d1, d2}};
}
static struct tensor cpu4(const struct operand *o, const size_t s[4]) {
  return tensor_4d(o->cpu, DTYPE_F32, s[0], s[1], s[2], s[3]);
}
static struct tensor gpu4(const struct operand *o, const size_t s[4]) {
  return tensor_4d(o->gpu, o->dtype, s[0], s[1], s[2], s[3]);
}

/* ---- comparisons ---- */

static double rtol_of(enum dtype d) { return d == DTYPE_F32 ? 1e-5 : d == DTYPE_BF16 ? 0x1p-8 : 0x1p-10; }

/* The GPU's o against the CPU's o->cpu, within the dtype's tolerance (above). */
static void expect_within(const char *op, const char *tensor, const struct operand *o, double rtol) {
  char what[160];
  snprintf(what, sizeof what, "%s %s (%s, %zu elements)", op, tensor, dtype_name(o->dtype), o->n);
  checks++;
  float *got = download(o);
  double max_ref = 0.0;
  for (size_t i = 0; i < o->n; i++) max_ref = fmax(max_ref, fabs(o->cpu[i]));
  for (size_t i = 0; i < o->n; i++) {
    double ref = o->cpu[i], err = fabs((double)got[i] - ref);
    if (!(err <= rtol * (fabs(ref) + max_ref))) {
      fail(what, "element %zu: cpu %.9g, cuda %.9g (max |cpu| %.9g)", i, ref, (double)got[i], max_ref);
      break;
    }
  }
  free(got);
}

static void expect_close(const char *op, const char *tensor, const struct operand *o) {
  expect_within(op, tensor, o, rtol_of(o->dtype));
}

/* A 16-bit attention on the GPU rounds the probabilities before p @ v and dv and the
 * scores' gradient before dq and dk, as FlashAttention does; the fp32 CPU twin rounds
 * none of them: each weight moves its term by up to u of it, so twice the tolerance. */
static void expect_attention(const char *op, const char *tensor, const struct operand *o) {
  expect_within(op, tensor, o, (o->dtype == DTYPE_F32 ? 1.0 : 2.0) * rtol_of(o->dtype));
}

static void expect_same_bits(const char *op, const char *tensor, const struct operand *o) {
  char what[160];
  snprintf(what, sizeof what, "%s %s (%s, %zu elements)", op, tensor, dtype_name(o->dtype), o->n);
  checks++;
  float *got = download(o);
  for (size_t i = 0; i < o->n; i++)
    if (memcmp(&got[i], &o->cpu[i], sizeof got[i]) != 0) {
      fail(what, "element %zu: cpu %a, cuda %a (not the same bits)", i, (double)o->cpu[i], (double)got[i]);
      break;
    }
  free(got);
}

/* The fp32 or 16-bit value's place in the order of the format's values (its bits as a
 * signed magnitude), so that adjacent values are one apart, across zero too. */
static int64_t ordinal(enum dtype d, float x) {
  int64_t bits, sign_bit;
  if (d == DTYPE_F32) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    bits = u;
    sign_bit = INT64_C(1) << 31;
  } else {
    bits = d == DTYPE_BF16 ? f32_to_bf16(x) : f32_to_f16(x);
    sign_bit = 1 << 15;
  }
  return bits & sign_bit ? -(bits & (sign_bit - 1)) : bits;
}

/* Within one ulp of the dtype, element by element (values already in the dtype); says how
 * many were one ulp apart. */
static void expect_within_ulp(const char *op, const char *tensor, const float *cpu, const float *got, size_t n,
                              enum dtype d) {
  char what[160];
  snprintf(what, sizeof what, "%s %s (%s, %zu elements)", op, tensor, dtype_name(d), n);
  checks++;
  size_t off_by_one = 0;
  for (size_t i = 0; i < n; i++) {
    int64_t apart = llabs(ordinal(d, cpu[i]) - ordinal(d, got[i]));
    if (apart > 1) {
      fail(what, "element %zu: cpu %a, cuda %a (more than one ulp apart)", i, (double)cpu[i], (double)got[i]);
      return;
    }
    off_by_one += (size_t)apart;
  }
  if (off_by_one) printf("%s: %zu values one ulp from the CPU's\n", what, off_by_one);
}

/* ---- RMSNorm ---- */

static void test_rmsnorm(size_t N, size_t C, enum dtype d) {
  const float eps = 1e-5f;
  struct operand inp = random_operand(N * C, d, 2.0f), weight = random_operand(C, d, 1.0f);
  struct operand out = output(N * C, d), rstd = output(N, DTYPE_F32); /* fp32 in every dtype */
  nn_rmsnorm_forward(&cpu_ctx, cpu2(&out, C), cpu1(&rstd), cpu2(&inp, C), cpu1(&weight), eps);
  nn_rmsnorm_forward(&gpu_ctx, gpu2(&out, C), gpu1(&rstd), gpu2(&inp, C), gpu1(&weight), eps);
  expect_close("rmsnorm_forward", "out", &out);
  expect_close("rmsnorm_forward", "rstd", &rstd);

  /* Both backwards from the CPU's rstd. Then again with each gradient absent in turn,
   * which must leave the other's as it was computed. */
  struct operand saved = upload(copy_of(rstd.cpu, N), N, DTYPE_F32), dout = random_operand(N * C, d, 1.0f);
  for (int absent = 0; absent <= 2; absent++) {
    struct operand dinp = random_operand(N * C, d, 0.5f), dweight = random_operand(C, d, 0.5f);
    struct tensor cd = absent == 1 ? TENSOR_NONE : cpu2(&dinp, C), gd = absent == 1 ? TENSOR_NONE : gpu2(&dinp, C);
    struct tensor cw = absent == 2 ? TENSOR_NONE : cpu1(&dweight), gw = absent == 2 ? TENSOR_NONE : gpu1(&dweight);
    nn_rmsnorm_backward(&cpu_ctx, cd, cw, cpu2(&dout, C), cpu2(&inp, C), cpu1(&weight), cpu1(&saved));
    nn_rmsnorm_backward(&gpu_ctx, gd, gw, gpu2(&dout, C), gpu2(&inp, C), gpu1(&weight), gpu1(&saved));
    expect_close("rmsnorm_backward", "dinp", &dinp);
    expect_close("rmsnorm_backward", "dweight", &dweight);
    release(&dinp);
    release(&dweight);
  }
  struct operand *all[] = {&inp, &weight, &out, &rstd, &saved, &dout};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

/* ---- RoPE ---- */

/* Llama 3.1's scaling; none; and a scaling whose bands the positions reach (L = 16). */
static const struct nn_rope ROPES[] = {
    {500000.0f, 8.0f, 1.0f, 4.0f, 8192},
    {10000.0f, 0.0f, 0.0f, 0.0f, 0},
    {500000.0f, 32.0f, 1.0f, 4.0f, 16},
};

static void test_rope_table(size_t maxT, size_t hd, const struct nn_rope *rope, enum dtype d) {
  size_t n = maxT * hd;
  float *cpu = fsdp_xmalloc(n * sizeof *cpu);
  nn_rope_table(&cpu_ctx, tensor_2d(cpu, DTYPE_F32, maxT, hd), rope);
  dtype_round(d, cpu, n);
  struct operand table = output(n, d);
  nn_rope_table(&gpu_ctx, gpu2(&table, hd), rope);
  float *got = download(&table);
  expect_within_ulp("rope_table", "table", cpu, got, n, d);
  free(got);
  free(cpu);
  release(&table);
}

static void test_rope(const size_t shape[4], enum dtype d) {
  size_t n = shape[0] * shape[1] * shape[2] * shape[3], T = shape[1], hd = shape[3];
  float *values = fsdp_xmalloc(T * hd * sizeof *values);
  nn_rope_table(&cpu_ctx, tensor_2d(values, DTYPE_F32, T, hd), &ROPES[2]);
  struct operand table = upload(values, T * hd, d), inp = random_operand(n, d, 1.0f), out = output(n, d);
  nn_rope_forward(&cpu_ctx, cpu4(&out, shape), cpu4(&inp, shape), cpu2(&table, hd));
  nn_rope_forward(&gpu_ctx, gpu4(&out, shape), gpu4(&inp, shape), gpu2(&table, hd));
  void (*expect)(const char *, const char *, const struct operand *) =
      d == DTYPE_F32 ? expect_same_bits : expect_close;
  expect("rope_forward", "out", &out);
  /* In place: the GPU's out is rewritten from its inp. */
  nn_rope_forward(&gpu_ctx, gpu4(&inp, shape), gpu4(&inp, shape), gpu2(&table, hd));
  memcpy(inp.cpu, out.cpu, n * sizeof *inp.cpu);
  expect("rope_forward in place", "out", &inp);

  struct operand dout = random_operand(n, d, 1.0f), dinp = random_operand(n, d, 0.5f);
  nn_rope_backward(&cpu_ctx, cpu4(&dinp, shape), cpu4(&dout, shape), cpu2(&table, hd));
  nn_rope_backward(&gpu_ctx, gpu4(&dinp, shape), gpu4(&dout, shape), gpu2(&table, hd));
  expect("rope_backward", "dinp", &dinp);
  struct operand *all[] = {&table, &inp, &out, &dout, &dinp};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

/* ---- SwiGLU ---- */

static void test_swiglu(size_t n, enum dtype d) {
  float *g = normals(n, 3.0f);
  /* silu's limits: exp(-g) overflows below about -88. */
  static const float EXTREMES[] = {-100.0f, -88.5f, 30.0f, 100.0f};
  for (size_t i = 0; i < n && i < 4; i++) g[i] = EXTREMES[i];
  struct operand gate = upload(g, n, d), up = random_operand(n, d, 1.0f), out = output(n, d);
  nn_swiglu_forward(&cpu_ctx, cpu1(&out), cpu1(&gate), cpu1(&up));
  nn_swiglu_forward(&gpu_ctx, gpu1(&out), gpu1(&gate), gpu1(&up));
  expect_close("swiglu_forward", "out", &out);

  struct operand dout = random_operand(n, d, 1.0f), dgate = random_operand(n, d, 0.5f),
                 dup = random_operand(n, d, 0.5f);
  nn_swiglu_backward(&cpu_ctx, cpu1(&dgate), cpu1(&dup), NN_GRAD_ADD, cpu1(&dout), cpu1(&gate), cpu1(&up));
  nn_swiglu_backward(&gpu_ctx, gpu1(&dgate), gpu1(&dup), NN_GRAD_ADD, gpu1(&dout), gpu1(&gate), gpu1(&up));
  expect_close("swiglu_backward", "dgate", &dgate);
  expect_close("swiglu_backward", "dup", &dup);
  /* Then written over what each side holds. */
  nn_swiglu_backward(&cpu_ctx, cpu1(&dgate), cpu1(&dup), NN_GRAD_SET, cpu1(&dout), cpu1(&gate), cpu1(&up));
  nn_swiglu_backward(&gpu_ctx, gpu1(&dgate), gpu1(&dup), NN_GRAD_SET, gpu1(&dout), gpu1(&gate), gpu1(&up));
  expect_close("swiglu_backward (set)", "dgate", &dgate);
  expect_close("swiglu_backward (set)", "dup", &dup);
  struct operand *all[] = {&gate, &up, &out, &dout, &dgate, &dup};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

/* ---- grouped-query attention ---- */

struct gqa_case {
  size_t B, T, NH, NKV, hd;
};

static void test_gqa(const struct gqa_case *g, enum dtype d) {
  size_t qs[4] = {g->B, g->T, g->NH, g->hd}, kvs[4] = {g->B, g->T, g->NKV, g->hd};
  size_t nq = g->B * g->T * g->NH * g->hd, nkv = g->B * g->T * g->NKV * g->hd, nl = g->B * g->NH * g->T;
  size_t C = g->NH * g->hd;
  struct operand q = random_operand(nq, d, 1.0f), k = random_operand(nkv, d, 1.0f), v = random_operand(nkv, d, 1.0f);
  struct operand out = output(nq, d), lse = output(nl, DTYPE_F32);
  struct tensor clse = t3(lse.cpu, DTYPE_F32, g->B, g->NH, g->T);
  nn_gqa_attention_forward(&cpu_ctx, cpu2(&out, C), clse, cpu4(&q, qs), cpu4(&k, kvs), cpu4(&v, kvs));
  nn_gqa_attention_forward(&gpu_ctx, gpu2(&out, C), t3(lse.gpu, DTYPE_F32, g->B, g->NH, g->T), gpu4(&q, qs),
                           gpu4(&k, kvs), gpu4(&v, kvs));
  expect_close("gqa_attention_forward", "lse", &lse);
  expect_attention("gqa_attention_forward", "out", &out);

  /* Both backwards from the CPU's out (rounded to the dtype) and lse; then with dq alone
   * absent, with only dv, and all three written (NN_GRAD_SET) over random values. */
  struct operand o = upload(copy_of(out.cpu, nq), nq, d), l = upload(copy_of(lse.cpu, nl), nl, DTYPE_F32);
  struct operand dout = random_operand(nq, d, 1.0f);
  static const char *const CASES[] = {"all", "no dq", "dv only", "all, set"};
  for (int c = 0; c < 4; c++) {
    struct operand dq = random_operand(nq, d, 0.5f), dk = random_operand(nkv, d, 0.5f),
                   dv = random_operand(nkv, d, 0.5f);
    int has_dq = c == 0 || c == 3, has_dk = c != 2;
    enum nn_grad mode = c == 3 ? NN_GRAD_SET : NN_GRAD_ADD;
    nn_gqa_attention_backward(&cpu_ctx, has_dq ? cpu4(&dq, qs) : TENSOR_NONE, has_dk ? cpu4(&dk, kvs) : TENSOR_NONE,
                              cpu4(&dv, kvs), mode, cpu2(&dout, C), cpu4(&q, qs), cpu4(&k, kvs), cpu4(&v, kvs),
                              cpu2(&o, C), t3(l.cpu, DTYPE_F32, g->B, g->NH, g->T));
    nn_gqa_attention_backward(&gpu_ctx, has_dq ? gpu4(&dq, qs) : TENSOR_NONE, has_dk ? gpu4(&dk, kvs) : TENSOR_NONE,
                              gpu4(&dv, kvs), mode, gpu2(&dout, C), gpu4(&q, qs), gpu4(&k, kvs), gpu4(&v, kvs),
                              gpu2(&o, C), t3(l.gpu, DTYPE_F32, g->B, g->NH, g->T));
    char op[64];
    snprintf(op, sizeof op, "gqa_attention_backward (%s)", CASES[c]);
    expect_attention(op, "dq", &dq);
    expect_attention(op, "dk", &dk);
    expect_attention(op, "dv", &dv);
    release(&dq);
    release(&dk);
    release(&dv);
  }
  /* The GPU's backward twice from the same gradients: the same bits (one writer per
   * element, no atomics). */
  struct operand first[3] = {random_operand(nq, d, 0.5f), random_operand(nkv, d, 0.5f), random_operand(nkv, d, 0.5f)};
  struct operand again[3];
  for (int i = 0; i < 3; i++) again[i] = upload(copy_of(first[i].cpu, first[i].n), first[i].n, d);
  for (int run = 0; run < 2; run++) {
    struct operand *x = run ? again : first;
    nn_gqa_attention_backward(&gpu_ctx, gpu4(&x[0], qs), gpu4(&x[1], kvs), gpu4(&x[2], kvs), NN_GRAD_ADD,
                              gpu2(&dout, C), gpu4(&q, qs), gpu4(&k, kvs), gpu4(&v, kvs), gpu2(&o, C),
                              t3(l.gpu, DTYPE_F32, g->B, g->NH, g->T));
  }
  static const char *const GRADS[] = {"dq", "dk", "dv"};
  for (int i = 0; i < 3; i++) {
    float *got = download(&first[i]);
    memcpy(again[i].cpu, got, first[i].n * sizeof *got);
    free(got);
    expect_same_bits("gqa_attention_backward twice", GRADS[i], &again[i]);
    release(&first[i]);
    release(&again[i]);
  }
  struct operand *all[] = {&q, &k, &v, &out, &lse, &o, &l, &dout};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

/* ---- the KV-cache attention of generation ---- */

/* n new queries against a cache of L positions, hd as Llama 3's. */
static void test_cached(size_t n, size_t L, size_t NH, size_t NKV, size_t hd, enum dtype d) {
  struct operand q = random_operand(n * NH * hd, d, 1.0f), k = random_operand(L * NKV * hd, d, 1.0f);
  struct operand v = random_operand(L * NKV * hd, d, 1.0f), out = output(n * NH * hd, d);
  size_t qs[3] = {n, NH, hd}, kvs[3] = {L, NKV, hd};
  nn_cached_attention_forward(&cpu_ctx, cpu2(&out, NH * hd), t3(q.cpu, DTYPE_F32, qs[0], qs[1], qs[2]),
                              t3(k.cpu, DTYPE_F32, kvs[0], kvs[1], kvs[2]),
                              t3(v.cpu, DTYPE_F32, kvs[0], kvs[1], kvs[2]));
  nn_cached_attention_forward(&gpu_ctx, gpu2(&out, NH * hd), t3(q.gpu, d, qs[0], qs[1], qs[2]),
                              t3(k.gpu, d, kvs[0], kvs[1], kvs[2]), t3(v.gpu, d, kvs[0], kvs[1], kvs[2]));
  expect_close("cached_attention_forward", "out", &out);
  struct operand *all[] = {&q, &k, &v, &out};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

/* ---- init_trunc_normal ---- */

static void test_trunc_normal(size_t n, float std, float bound) {
  /* The counter's low word wraps within the larger sizes. */
  const uint64_t stream = 12, first = (1ull << 32) - 1000;
  char what[96];
  snprintf(what, sizeof what, "init_trunc_normal (std %g, bound %g, %zu elements)", (double)std, (double)bound, n);
  float *x = fsdp_xmalloc(n * sizeof *x);
  nn_init_trunc_normal(&cpu_ctx, tensor_1d(x, DTYPE_F32, n), SEED, stream, first, std, bound);
  struct operand a = output(n, DTYPE_F32), b = output(n, DTYPE_F32);
  nn_init_trunc_normal(&gpu_ctx, gpu1(&a), SEED, stream, first, std, bound);
  nn_init_trunc_normal(&gpu_ctx, gpu1(&b), SEED, stream, first, std, bound);
  float *got = download(&a);
  memcpy(b.cpu, got, n * sizeof *got);
  expect_same_bits(what, "twice on the GPU", &b);
  expect_within_ulp(what, "x", x, got, n, DTYPE_F32);
  checks++;
  for (size_t i = 0; i < n; i++)
    if (!(fabsf(got[i]) <= bound)) {
      fail(what, "element %zu: %a is out of bounds", i, (double)got[i]);
      break;
    }
  free(got);
  free(x);
  release(&a);
  release(&b);
}

int main(void) {
  char why[256];
  if (!device_cuda_available(why, sizeof why)) {
    printf("nn_cuda_llama_test: skipped: no GPU to run on (%s)\n", why);
    return SKIP;
  }
  gpu = device_open(DEVICE_CUDA, DEVICE_CUDA);
  gpu_ctx = (struct nn_ctx){gpu, device_stream_create(gpu, "nn_cuda_llama_test")};
  cpu_ctx = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "nn_cuda_llama_test cpu")};

  /* Rows of one element to many blocks' worth; widths below a warp, odd, and Llama 8B's;
   * rows enough for dweight's column sums to take many splits (src/nn/cuda/colsum.h). */
  static const size_t RMS[][2] = {{1, 1}, {72, 48}, {33, 257}, {130, 4096}, {5000, 96}};
  /* hd 8 as the parity models; 2 (one pair); 128 as Llama 3's. */
  static const size_t ROPE[][4] = {{3, 24, 6, 8}, {2, 5, 3, 2}, {2, 37, 2, 128}};
  /* The parity models' shape; multi-head with hd not a multiple of 32; one kv head and
   * T over several tiles, the last partial (Llama 3 1B's hd); the largest hd (Llama 3
   * 8B's) over tiles; a single position. */
  static const struct gqa_case GQA[] = {
      {3, 24, 6, 2, 8}, {2, 37, 4, 4, 40}, {1, 300, 8, 1, 64}, {1, 150, 4, 2, 128}, {2, 1, 3, 3, 32},
  };
  for (size_t t = 0; t < sizeof DTYPES / sizeof DTYPES[0]; t++) {
    enum dtype d = DTYPES[t];
    for (size_t i = 0; i < sizeof RMS / sizeof RMS[0]; i++) test_rmsnorm(RMS[i][0], RMS[i][1], d);
    /* Past position 8192, where Llama 3.1's table is most sensitive to every rounding. */
    test_rope_table(8300, 128, &ROPES[0], d);
    test_rope_table(64, 16, &ROPES[1], d);
    test_rope_table(40, 8, &ROPES[2], d);
    for (size_t i = 0; i < sizeof ROPE / sizeof ROPE[0]; i++) test_rope(ROPE[i], d);
    test_swiglu(1, d);
    test_swiglu(1000, d);
    test_swiglu(65537, d);
    for (size_t i = 0; i < sizeof GQA / sizeof GQA[0]; i++) test_gqa(&GQA[i], d);
    /* Again in the tiling of a GPU whose blocks may have 99 KiB (sm_86, sm_89, sm_120),
     * whatever this one allows: Llama 3 8B's head dim 128 in fp32 takes the other side's
     * tile 32 or 16 rows at a time, head dim 96 (CUDA cores in every dtype) 32 in the
     * backward (src/nn/cuda/attention.c's FSDP_CUDA_SMEM_LIMIT). */
    static const struct gqa_case HD96 = {2, 130, 4, 2, 96};
    setenv("FSDP_CUDA_SMEM_LIMIT", "101376", 1);
    test_gqa(&GQA[3], d);
    test_gqa(&HD96, d);
    unsetenv("FSDP_CUDA_SMEM_LIMIT");
    test_cached(1, 300, 8, 2, 64, d);
    test_cached(5, 77, 4, 4, 128, d);
  }
  /* bound = std resamples about a third of the draws, some several times. */
  static const size_t SIZES[] = {1, 1000, 65537, (1u << 20) + 7};
  for (size_t i = 0; i < sizeof SIZES / sizeof SIZES[0]; i++) {
    test_trunc_normal(SIZES[i], 0.02f, 0.02f);
    test_trunc_normal(SIZES[i], 0.02f, 0.04f);
  }

  stream_destroy(gpu_ctx.stream);
  stream_destroy(cpu_ctx.stream);
  device_close(gpu);
  printf("nn_cuda_llama_test: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
