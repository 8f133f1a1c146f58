/* The CPU's matmul (oneDNN) in fp32, bf16 and fp16, against a double-precision
 * reference computed from the same rounded inputs. An output may differ from the
 * reference by fp32 accumulation (gamma_K = K u32 / (1 - K u32) times the sum of the
 * terms' magnitudes, u32 = 2^-24) plus ONE rounding to the dtype (u = 2^-8 for bf16,
 * 2^-11 for fp16, relative): an implementation that rounded a partial sum, or the
 * product before adding the old gradient, breaks that bound wherever terms cancel.
 * Gradients start from random values, so the bound also proves that the backward
 * accumulates; the forward's output starts from random values too, which it must
 * overwrite. Then: results are the same bits run to run, and a repeated problem creates
 * no oneDNN primitive (onednn_primitives_created). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/nn.h"
#include "fsdp/rng.h"
#include "onednn.h"

static const uint64_t SEED = 4321;
static uint64_t next_stream;
static struct nn_ctx cpu;

/* A tensor's storage in its dtype, and the exact value of each element as a double. */
struct buf {
  enum dtype dtype;
  size_t n;
  void *data;
  double *value;
};

static double element(const struct buf *b, size_t i) {
  switch (b->dtype) {
  case DTYPE_BF16: return bf16_to_f32(((const uint16_t *)b->data)[i]);
  case DTYPE_F16: return f16_to_f32(((const uint16_t *)b->data)[i]);
  default: return ((const float *)b->data)[i];
  }
}

/* n normal values, rounded to d. */
static struct buf randn(enum dtype d, size_t n) {
  struct buf b = {d, n, fsdp_xmalloc(n * dtype_size(d)), fsdp_xmalloc(n * sizeof(double))};
  uint64_t stream = next_stream++;
  for (size_t i = 0; i < n; i++) {
    float x = rng_normal(SEED, stream, i);
    if (d == DTYPE_F32) ((float *)b.data)[i] = x;
    else ((uint16_t *)b.data)[i] = d == DTYPE_BF16 ? f32_to_bf16(x) : f32_to_f16(x);
    b.value[i] = element(&b, i);
  }
  return b;
}

static struct buf copy(const struct buf *b) {
  struct buf c = {b->dtype, b->n, fsdp_xmalloc(b->n * dtype_size(b->dtype)), fsdp_xmalloc(b->n * sizeof(double))};
  memcpy(c.data, b->data, b->n * dtype_size(b->dtype));
  memcpy(c.value, b->value, b->n * sizeof(double));
  return c;
}

static void release(struct buf *b) { free(b->data), free(b->value); }

static struct tensor t2(const struct buf *b, int rows, int cols) {
  return tensor_2d(b->data, b->dtype, (size_t)rows, (size_t)cols);
}

/* The rounding to d, relative. */
static double unit_roundoff(enum dtype d) { return d == DTYPE_BF16 ? 0x1p-8 : d == DTYPE_F16 ? 0x1p-11 : 0.0; }

static double gamma_fp32(int terms) {
  double nu = terms * 0x1p-24;
  return nu / (1.0 - nu);
}

/* got[i] against ref[i], where the terms summed into ref[i] have magnitudes summing to
 * mag[i]: |got - ref| <= u |ref| + (1 + u) gamma_terms mag. */
static void expect_close(const char *what, const struct buf *got, const double *ref, const double *mag, int terms) {
  double u = unit_roundoff(got->dtype), g = gamma_fp32(terms);
  int bad = 0;
  double worst = 0.0;
  for (size_t i = 0; i < got->n; i++) {
    double err = fabs(element(got, i) - ref[i]), bound = u * fabs(ref[i]) + (1.0 + u) * g * mag[i] + 1e-30;
    if (err > bound) bad++;
    if (err / bound > worst) worst = err / bound;
  }
  EXPECT(bad == 0, "%s (%s): %d of %zu elements past the bound, worst at %.2f times it", what,
         dtype_name(got->dtype), bad, got->n, worst);
}

/* One problem: out (N, OC) = inp (N, C) @ weight^T + bias, and its backward. */
struct problem {
  int N, C, OC, with_bias, with_dinp;
};

struct operands {
  struct buf inp, weight, bias, out, dout, dinp, dweight, dbias;
};

static struct operands make(enum dtype d, const struct problem *p) {
  size_t N = p->N, C = p->C, OC = p->OC;
  return (struct operands){randn(d, N * C), randn(d, OC * C), randn(d, OC), randn(d, N * OC), randn(d, N * OC),
                           randn(d, N * C), randn(d, OC * C), randn(d, OC)};
}

static void run(const struct problem *p, struct operands *o) {
  int N = p->N, C = p->C, OC = p->OC;
  nn_matmul_forward(&cpu, t2(&o->out, N, OC), t2(&o->inp, N, C), t2(&o->weight, OC, C),
                    p->with_bias ? tensor_1d(o->bias.data, o->bias.dtype, OC) : TENSOR_NONE);
  nn_matmul_backward(&cpu, p->with_dinp ? t2(&o->dinp, N, C) : TENSOR_NONE, NN_GRAD_ADD, t2(&o->dweight, OC, C),
                     p->with_bias ? tensor_1d(o->dbias.data, o->dbias.dtype, OC) : TENSOR_NONE, t2(&o->dout, N, OC),
                     t2(&o->inp, N, C), t2(&o->weight, OC, C));
}

static void release_all(struct operands *o) {
  struct buf *all[] = {&o->inp, &o->weight, &o->bias, &o->out, &o->dout, &o->dinp, &o->dweight, &o->dbias};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) release(all[i]);
}

static void check_against_reference(enum dtype d, const struct problem *p) {
  int N = p->N, C = p->C, OC = p->OC;
  struct operands o = make(d, p);
  struct buf dinp0 = copy(&o.dinp), dweight0 = copy(&o.dweight), dbias0 = copy(&o.dbias);
  struct buf out0 = copy(&o.out);
  run(p, &o);

  size_t most = o.out.n > o.dinp.n ? o.out.n : o.dinp.n;
  most = most > o.dweight.n ? most : o.dweight.n;
  double *ref = fsdp_xmalloc(most * sizeof(double)), *mag = fsdp_xmalloc(most * sizeof(double));
  for (int i = 0; i < N; i++)
    for (int j = 0; j < OC; j++) {
      double s = p->with_bias ? o.bias.value[j] : 0.0, m = fabs(s);
      for (int k = 0; k < C; k++) {
        double t = o.inp.value[(size_t)i * C + k] * o.weight.value[(size_t)j * C + k];
        s += t, m += fabs(t);
      }
      ref[(size_t)i * OC + j] = s, mag[(size_t)i * OC + j] = m;
    }
  expect_close("out = inp @ weight^T + bias", &o.out, ref, mag, C + 1);

  if (p->with_dinp) {
    for (int i = 0; i < N; i++)
      for (int k = 0; k < C; k++) {
        double s = dinp0.value[(size_t)i * C + k], m = fabs(s);
        for (int j = 0; j < OC; j++) {
          double t = o.dout.value[(size_t)i * OC + j] * o.weight.value[(size_t)j * C + k];
          s += t, m += fabs(t);
        }
        ref[(size_t)i * C + k] = s, mag[(size_t)i * C + k] = m;
      }
    expect_close("dinp += dout @ weight", &o.dinp, ref, mag, OC + 1);
  } else {
    EXPECT(memcmp(o.dinp.data, dinp0.data, dinp0.n * dtype_size(d)) == 0, "an absent dinp was written (%s)",
           dtype_name(d));
  }

  for (int j = 0; j < OC; j++)
    for (int k = 0; k < C; k++) {
      double s = dweight0.value[(size_t)j * C + k], m = fabs(s);
      for (int i = 0; i < N; i++) {
        double t = o.dout.value[(size_t)i * OC + j] * o.inp.value[(size_t)i * C + k];
        s += t, m += fabs(t);
      }
      ref[(size_t)j * C + k] = s, mag[(size_t)j * C + k] = m;
    }
  expect_close("dweight += dout^T @ inp", &o.dweight, ref, mag, N + 1);

  if (p->with_bias) {
    for (int j = 0; j < OC; j++) {
      double s = dbias0.value[j], m = fabs(s);
      for (int i = 0; i < N; i++) s += o.dout.value[(size_t)i * OC + j], m += fabs(o.dout.value[(size_t)i * OC + j]);
      ref[j] = s, mag[j] = m;
    }
    expect_close("dbias += column sums of dout", &o.dbias, ref, mag, N + 1);
  }

  /* The same inputs again, from the same starting gradients: the same bits. */
  struct operands again = {o.inp, o.weight, o.bias, copy(&out0), o.dout, copy(&dinp0), copy(&dweight0),
                           copy(&dbias0)};
  uint64_t created = onednn_primitives_created();
  run(p, &again);
  EXPECT(onednn_primitives_created() == created, "a repeated problem created %llu primitives (%s)",
         (unsigned long long)(onednn_primitives_created() - created), dtype_name(d));
  struct buf *first[] = {&o.out, &o.dinp, &o.dweight, &o.dbias}, *second[] = {&again.out, &again.dinp,
                                                                               &again.dweight, &again.dbias};
  for (int i = 0; i < 4; i++)
    EXPECT(memcmp(first[i]->data, second[i]->data, first[i]->n * dtype_size(d)) == 0,
           "output %d differs between two runs of the same problem (%s)", i, dtype_name(d));

  release(&again.out), release(&again.dinp), release(&again.dweight), release(&again.dbias);
  release(&dinp0), release(&dweight0), release(&dbias0), release(&out0);
  free(ref), free(mag);
  release_all(&o);
}

/* A new problem creates primitives (so that the counter is known to count), and the
 * same one on other buffers creates none. */
static void check_primitive_cache(void) {
  struct problem p = {23, 41, 17, 1, 1};
  uint64_t before = onednn_primitives_created();
  struct operands a = make(DTYPE_BF16, &p), b = make(DTYPE_BF16, &p);
  run(&p, &a);
  uint64_t after_first = onednn_primitives_created();
  EXPECT(after_first == before + 3, "forward + backward of a new problem created %llu primitives, not 3",
         (unsigned long long)(after_first - before));
  run(&p, &b);
  EXPECT(onednn_primitives_created() == after_first, "the same problem on other buffers created %llu primitives",
         (unsigned long long)(onednn_primitives_created() - after_first));
  release_all(&a), release_all(&b);
}

int main(void) {
  cpu = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "kernels")};
  /* Small and odd, then past oneDNN's blocks with tails in every dimension; the last
   * without a bias or dinp (the LM head's backward into a frozen input). */
  struct problem problems[] = {{37, 53, 29, 1, 1}, {130, 257, 190, 1, 1}, {67, 96, 131, 0, 0}};
  enum dtype dtypes[] = {DTYPE_F32, DTYPE_BF16, DTYPE_F16};
  for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++) check_against_reference(dtypes[d], &problems[i]);
  check_primitive_cache();
  return check_summary("nn_matmul_test");
}
