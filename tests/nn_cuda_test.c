/* The cuda runtime ops (src/nn/cuda) against their CPU twins (src/nn/cpu/runtime.c), on
 * the same random inputs, at sizes from one element to past a million: odd sizes, one
 * block and many, and enough chunks of the in-place casts' schedule (cast.cu).
 * Tolerances: none (bit for bit) for cast, round, add, fill, grad_clip_scale and adamw, whatever
 * the dtype; one fp32 ulp for init_normal, whose fp64 log and cos are CUDA's, not
 * glibc's (init_normal.cu), and which must still give the same bits run after run; for
 * sum and sum_squares, whose blocks add up in another order (sum.cu), 1e-12 of the sum
 * of the magnitudes added (the initial value's and every term's).
 * It exits 77 (ctest: skipped) where there is no GPU. */
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

enum { SKIP = 77 };
static const uint64_t SEED = 20240611;
/* The last past four times the largest grid (grid.cuh: 132 x 32 blocks of 256), where
 * the casts and sums take four elements a thread at a time. */
static const size_t SIZES[] = {1, 3, 255, 1000, 4097, 65537, (1u << 20) + 7, (1u << 23) + 5};

static struct device *gpu;
static struct nn_ctx cpu_ctx, gpu_ctx;
static uint64_t next_stream;
static int checks, failures;

__attribute__((format(printf, 3, 4))) static void fail(const char *what, size_t n, const char *fmt, ...) {
  failures++;
  fprintf(stderr, "FAIL %s (n = %zu): ", what, n);
  va_list args;
  va_start(args, fmt);
  vfprintf(stderr, fmt, args);
  va_end(args);
  fputc('\n', stderr);
}

/* ---- inputs ---- */

static uint32_t float_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

static float *normals(size_t n, float scale) {
  uint64_t stream = next_stream++;
  float *x = fsdp_xmalloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) x[i] = scale * rng_normal(SEED, stream, i);
  return x;
}

/* What a cast must get right: any bit pattern (NaNs, infinities, subnormals), ties of
 * bf16 (the 16 dropped bits exactly half), ties of fp16 at exponents from its
 * subnormals to past its largest value, and plain values of many magnitudes. */
static float *cast_inputs(size_t n) {
  uint64_t stream = next_stream++;
  float *x = fsdp_xmalloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) {
    uint32_t r[4];
    philox4x32(SEED, stream, i, r);
    uint32_t sign = r[0] & 0x80000000u;
    switch (i % 4) {
      case 0: x[i] = float_of(r[0]); break;
      case 1: x[i] = float_of((r[0] & 0xffff0000u) | 0x8000u); break;
      case 2: x[i] = float_of(sign | ((103u + r[1] % 42u) << 23) | (r[2] & 0x7fe000u) | 0x1000u); break;
      default: x[i] = ldexpf(rng_normal(SEED, stream, i), (int)(r[1] % 48u) - 24); break;
    }
  }
  return x;
}

static uint16_t *halves(size_t n) {
  uint64_t stream = next_stream++;
  uint16_t *h = fsdp_xmalloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++) {
    uint32_t r[4];
    philox4x32(SEED, stream, i, r);
    h[i] = (uint16_t)r[0];
  }
  return h;
}

/* ---- the GPU's copies ---- */

static void *to_gpu(const void *host, size_t bytes) {
  void *d = device_alloc(gpu, bytes, MEM_OTHER, gpu_ctx.stream);
  device_copy_to_device(gpu_ctx.stream, d, host, bytes);
  return d;
}

/* The GPU buffer's bytes, once the work launched before is done; frees it. */
static void *from_gpu(void *d, size_t bytes) {
  void *host = fsdp_xmalloc(bytes);
  device_copy_to_host(gpu_ctx.stream, host, d, bytes);
  stream_synchronize(gpu_ctx.stream);
  device_free(gpu, d, gpu_ctx.stream);
  return host;
}

static void *copy_of(const void *x, size_t bytes) {
  void *y = fsdp_xmalloc(bytes);
  memcpy(y, x, bytes);
  return y;
}

/* ---- comparisons ---- */

static void expect_same_floats(const char *what, size_t n, const float *cpu, const float *gpu_result) {
  checks++;
  for (size_t i = 0; i < n; i++)
    if (float_bits(cpu[i]) != float_bits(gpu_result[i])) {
      fail(what, n, "element %zu: cpu %a, cuda %a (not the same bits)", i, (double)cpu[i],
           (double)gpu_result[i]);
      return;
    }
}

static void expect_same_halves(const char *what, size_t n, const uint16_t *cpu, const uint16_t *gpu_result) {
  checks++;
  for (size_t i = 0; i < n; i++)
    if (cpu[i] != gpu_result[i]) {
      fail(what, n, "element %zu: cpu 0x%04x, cuda 0x%04x", i, (unsigned)cpu[i], (unsigned)gpu_result[i]);
      return;
    }
}

/* ---- the ops ---- */

static struct tensor t1(void *data, enum dtype dtype, size_t n) { return tensor_1d(data, dtype, n); }

static void test_casts(size_t n, enum dtype d) {
  char what[64];
  const char *name = dtype_name(d);
  float *x = cast_inputs(n);
  uint16_t *h = halves(n);

  snprintf(what, sizeof what, "cast fp32 -> %s", name);
  uint16_t *packed = fsdp_xmalloc(2 * n);
  nn_cast(&cpu_ctx, t1(packed, d, n), t1(x, DTYPE_F32, n));
  void *gx = to_gpu(x, 4 * n), *g16 = device_alloc(gpu, 2 * n, MEM_OTHER, gpu_ctx.stream);
  nn_cast(&gpu_ctx, t1(g16, d, n), t1(gx, DTYPE_F32, n));
  device_free(gpu, gx, gpu_ctx.stream);
  uint16_t *got16 = from_gpu(g16, 2 * n);
  expect_same_halves(what, n, packed, got16);
  free(got16);
  free(packed);

  snprintf(what, sizeof what, "cast %s -> fp32", name);
  float *unpacked = fsdp_xmalloc(4 * n);
  nn_cast(&cpu_ctx, t1(unpacked, DTYPE_F32, n), t1(h, d, n));
  void *gh = to_gpu(h, 2 * n), *g32 = device_alloc(gpu, 4 * n, MEM_OTHER, gpu_ctx.stream);
  nn_cast(&gpu_ctx, t1(g32, DTYPE_F32, n), t1(gh, d, n));
  device_free(gpu, gh, gpu_ctx.stream);
  float *got32 = from_gpu(g32, 4 * n);
  expect_same_floats(what, n, unpacked, got32);
  free(got32);
  free(unpacked);

  /* In place, narrowing: the 16-bit values land in the buffer's lower half. */
  snprintf(what, sizeof what, "cast fp32 -> %s in place", name);
  float *buf = copy_of(x, 4 * n);
  nn_cast(&cpu_ctx, t1(buf, d, n), t1(buf, DTYPE_F32, n));
  void *gbuf = to_gpu(x, 4 * n);
  nn_cast(&gpu_ctx, t1(gbuf, d, n), t1(gbuf, DTYPE_F32, n));
  got16 = from_gpu(gbuf, 4 * n);
  expect_same_halves(what, n, (uint16_t *)buf, got16);
  free(got16);
  free(buf);

  /* In place, widening from the upper half; the lower half starts as any bytes. */
  snprintf(what, sizeof what, "cast %s -> fp32 in place", name);
  buf = copy_of(x, 4 * n);
  memcpy((char *)buf + 2 * n, h, 2 * n);
  void *start = copy_of(buf, 4 * n);
  nn_cast(&cpu_ctx, t1(buf, DTYPE_F32, n), t1((char *)buf + 2 * n, d, n));
  gbuf = to_gpu(start, 4 * n);
  nn_cast(&gpu_ctx, t1(gbuf, DTYPE_F32, n), t1((char *)gbuf + 2 * n, d, n));
  got32 = from_gpu(gbuf, 4 * n);
  expect_same_floats(what, n, buf, got32);
  free(got32);
  free(start);
  free(buf);

  snprintf(what, sizeof what, "round to %s", name);
  buf = copy_of(x, 4 * n);
  nn_round(&cpu_ctx, t1(buf, DTYPE_F32, n), d);
  gbuf = to_gpu(x, 4 * n);
  nn_round(&gpu_ctx, t1(gbuf, DTYPE_F32, n), d);
  got32 = from_gpu(gbuf, 4 * n);
  expect_same_floats(what, n, buf, got32);
  free(got32);
  free(buf);

  free(h);
  free(x);
}

/* A cast to the same dtype is a copy; rounding to fp32 changes nothing. */
static void test_copies(size_t n) {
  float *x = cast_inputs(n), *y = fsdp_xmalloc(4 * n);
  nn_cast(&cpu_ctx, t1(y, DTYPE_F32, n), t1(x, DTYPE_F32, n));
  void *gx = to_gpu(x, 4 * n), *gy = device_alloc(gpu, 4 * n, MEM_OTHER, gpu_ctx.stream);
  nn_cast(&gpu_ctx, t1(gy, DTYPE_F32, n), t1(gx, DTYPE_F32, n));
  nn_round(&gpu_ctx, t1(gy, DTYPE_F32, n), DTYPE_F32);
  device_free(gpu, gx, gpu_ctx.stream);
  float *got = from_gpu(gy, 4 * n);
  expect_same_floats("cast fp32 -> fp32", n, y, got);
  free(got);
  free(y);
  free(x);
}

static void test_elementwise(size_t n) {
  float *x = normals(n, 1.0f), *y = normals(n, 3.0f);
  void *gx = to_gpu(x, 4 * n), *gy = to_gpu(y, 4 * n);

  nn_add(&cpu_ctx, t1(y, DTYPE_F32, n), t1(x, DTYPE_F32, n));
  nn_add(&gpu_ctx, t1(gy, DTYPE_F32, n), t1(gx, DTYPE_F32, n));
  float *got = from_gpu(gy, 4 * n);
  expect_same_floats("add", n, y, got);
  free(got);

  nn_fill(&cpu_ctx, t1(x, DTYPE_F32, n), -0.1f);
  gx = device_alloc(gpu, 4 * n, MEM_OTHER, gpu_ctx.stream);
  nn_fill(&gpu_ctx, t1(gx, DTYPE_F32, n), -0.1f);
  got = from_gpu(gx, 4 * n);
  expect_same_floats("fill", n, x, got);
  free(got);
  free(y);
  free(x);
}

static void test_sums(size_t n) {
  const double initial = 0.25;
  float *x = normals(n, 2.0f);
  void *gx = to_gpu(x, 4 * n);
  for (int squares = 0; squares <= 1; squares++) {
    const char *what = squares ? "sum_squares" : "sum";
    void (*op)(const struct nn_ctx *, struct tensor, struct tensor) = squares ? nn_sum_squares : nn_sum;
    double sum = initial, magnitude = initial;
    for (size_t i = 0; i < n; i++) magnitude += squares ? (double)x[i] * x[i] : fabs(x[i]);
    op(&cpu_ctx, t1(&sum, DTYPE_F64, 1), t1(x, DTYPE_F32, n));
    void *gsum = to_gpu(&initial, sizeof initial);
    op(&gpu_ctx, t1(gsum, DTYPE_F64, 1), t1(gx, DTYPE_F32, n));
    double *got = from_gpu(gsum, sizeof *got);
    checks++;
    if (!(fabs(*got - sum) <= 1e-12 * magnitude)) fail(what, n, "cpu %.17g, cuda %.17g", sum, *got);
    free(got);
  }
  device_free(gpu, gx, gpu_ctx.stream);
  free(x);
}

/* How many fp32 values lie between a and b (of the same sign, as normals of one seed are). */
static uint32_t ulps_apart(float a, float b) {
  uint32_t x = float_bits(a), y = float_bits(b);
  return x > y ? x - y : y - x;
}

static void test_init_normal(size_t n) {
  /* The counter's low word wraps within the larger sizes. */
  const uint64_t stream = 11, first = (1ull << 32) - 1000;
  const float std = 0.02f;
  float *x = fsdp_xmalloc(4 * n);
  nn_init_normal(&cpu_ctx, t1(x, DTYPE_F32, n), SEED, stream, first, std);
  void *ga = device_alloc(gpu, 4 * n, MEM_OTHER, gpu_ctx.stream);
  void *gb = device_alloc(gpu, 4 * n, MEM_OTHER, gpu_ctx.stream);
  nn_init_normal(&gpu_ctx, t1(ga, DTYPE_F32, n), SEED, stream, first, std);
  nn_init_normal(&gpu_ctx, t1(gb, DTYPE_F32, n), SEED, stream, first, std);
  float *a = from_gpu(ga, 4 * n), *b = from_gpu(gb, 4 * n);
  expect_same_floats("init_normal, twice on the GPU", n, a, b);
  checks++;
  size_t off_by_one = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t ulps = ulps_apart(x[i], a[i]);
    if (ulps > 1) {
      fail("init_normal", n, "element %zu: cpu %a, cuda %a (more than one ulp apart)", i, (double)x[i],
           (double)a[i]);
      break;
    }
    off_by_one += ulps;
  }
  if (off_by_one) printf("init_normal (n = %zu): %zu values one ulp from the CPU's\n", n, off_by_one);
  free(b);
  free(a);
  free(x);
}

/* The clipping scale of each case (the sum of squares, the unscale, max_norm): not clipped,
 * clipped, clipped after unscaling, no clipping but an unscale, a non-finite norm. */
static void test_grad_clip_scale(void) {
  static const struct { double squares; float unscale, max_norm; } CASES[] = {
      {0.09, 1.0f, 1.0f}, {7.3, 1.0f, 1.0f}, {7.3e6, 1.0f / 4096, 0.5f}, {2.0, 1.0f / 65536, 0.0f},
      {INFINITY, 1.0f, 1.0f}};
  double *squares = device_alloc(gpu, sizeof(double), MEM_OTHER, gpu_ctx.stream);
  float *scale = device_alloc(gpu, sizeof(float), MEM_OTHER, gpu_ctx.stream);
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    double host_squares = CASES[i].squares;
    float expected, got;
    nn_grad_clip_scale(&cpu_ctx, t1(&expected, DTYPE_F32, 1), t1(&host_squares, DTYPE_F64, 1), CASES[i].unscale,
                       CASES[i].max_norm);
    device_copy_to_device(gpu_ctx.stream, squares, &host_squares, sizeof host_squares);
    nn_grad_clip_scale(&gpu_ctx, t1(scale, DTYPE_F32, 1), t1(squares, DTYPE_F64, 1), CASES[i].unscale,
                       CASES[i].max_norm);
    device_copy_to_host(gpu_ctx.stream, &got, scale, sizeof got);
    stream_synchronize(gpu_ctx.stream);
    expect_same_floats("grad_clip_scale", 1, &expected, &got);
  }
  device_free(gpu, squares, gpu_ctx.stream);
  device_free(gpu, scale, gpu_ctx.stream);
}

/* Two steps, so that the second starts from moments the first wrote, the second with a
 * gradient scale; with a rounded copy in rd (DTYPE_F32: none). */
static void test_adamw(size_t n, enum dtype rd) {
  float *param = normals(n, 0.05f), *grad = normals(n, 0.01f), *m = normals(n, 0.001f), *v = normals(n, 1e-4f);
  for (size_t i = 0; i < n; i++) v[i] = v[i] * v[i];
  float *host[4] = {param, grad, m, v}, grad_scale = 0.3712f;
  void *dev[4], *dev_scale = to_gpu(&grad_scale, sizeof grad_scale);
  for (int k = 0; k < 4; k++) dev[k] = to_gpu(host[k], 4 * n);
  uint16_t *rounded = rd == DTYPE_F32 ? NULL : fsdp_xcalloc(n, sizeof *rounded);
  void *dev_rounded = rounded ? to_gpu(rounded, n * sizeof *rounded) : NULL;
  struct tensor cpu_r = rounded ? t1(rounded, rd, n) : TENSOR_NONE;
  struct tensor gpu_r = rounded ? t1(dev_rounded, rd, n) : TENSOR_NONE;
  for (int t = 1; t <= 2; t++) {
    struct nn_adamw h = {.lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
                         .bias_correction1 = 1.0f - powf(0.9f, (float)t),
                         .bias_correction2_sqrt = sqrtf(1.0f - powf(0.95f, (float)t))};
    nn_adamw(&cpu_ctx, t1(param, DTYPE_F32, n), cpu_r, t1(grad, DTYPE_F32, n),
             t == 2 ? t1(&grad_scale, DTYPE_F32, 1) : TENSOR_NONE, t1(m, DTYPE_F32, n), t1(v, DTYPE_F32, n), &h);
    nn_adamw(&gpu_ctx, t1(dev[0], DTYPE_F32, n), gpu_r, t1(dev[1], DTYPE_F32, n),
             t == 2 ? t1(dev_scale, DTYPE_F32, 1) : TENSOR_NONE, t1(dev[2], DTYPE_F32, n), t1(dev[3], DTYPE_F32, n),
             &h);
  }
  device_free(gpu, dev_scale, gpu_ctx.stream);
  if (rounded) {
    uint16_t *got = from_gpu(dev_rounded, n * sizeof *got);
    expect_same_halves(rd == DTYPE_BF16 ? "adamw rounded copy (bf16)" : "adamw rounded copy (fp16)", n, rounded, got);
    free(got), free(rounded);
  }
  static const char *const NAMES[4] = {"adamw param", "adamw grad", "adamw m", "adamw v"};
  for (int k = 0; k < 4; k++) {
    float *got = from_gpu(dev[k], 4 * n);
    expect_same_floats(NAMES[k], n, host[k], got);
    free(got);
    free(host[k]);
  }
}

int main(void) {
  char why[256];
  if (!device_cuda_available(why, sizeof why)) {
    printf("nn_cuda_test: skipped: no GPU to run on (%s)\n", why);
    return SKIP;
  }
  gpu = device_open(DEVICE_CUDA, DEVICE_CUDA);
  gpu_ctx = (struct nn_ctx){gpu, device_stream_create(gpu, "nn_cuda_test")};
  cpu_ctx = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "nn_cuda_test cpu")};

  for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
    size_t n = SIZES[s];
    test_casts(n, DTYPE_BF16);
    test_casts(n, DTYPE_F16);
    test_copies(n);
    test_elementwise(n);
    test_sums(n);
    test_init_normal(n);
    test_adamw(n, DTYPE_F32);
    test_adamw(n, DTYPE_BF16);
    test_adamw(n, DTYPE_F16);
  }
  test_grad_clip_scale();
  stream_destroy(gpu_ctx.stream);
  stream_destroy(cpu_ctx.stream);
  device_close(gpu);
  printf("nn_cuda_test: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
