/* Times fsdp.c's attention, forward and backward, at one shape: the op GPT-2 and Llama
 * call (nn_gqa_attention_*; GPT-2's packed qkv runs the same kernel), on the CPU or the
 * GPU, for bench/attention.sh, which sets it beside PyTorch's SDPA.
 * usage: attention cpu|cuda fp32|bf16|fp16 B T NH NKV HD REPEATS
 * prints: forward and backward milliseconds, each the median of REPEATS after a warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/timer.h"

static struct nn_ctx ctx;

/* n normal values (std 1) in dtype d on the context's device: drawn in fp32, cast. */
static void *normal(enum dtype d, size_t n, uint64_t stream) {
  void *f = device_alloc(ctx.device, n * sizeof(float), MEM_OTHER, ctx.stream);
  nn_init_normal(&ctx, tensor_1d(f, DTYPE_F32, n), 1, stream, 0, 1.0f);
  if (d == DTYPE_F32) return f;
  void *x = device_alloc(ctx.device, n * dtype_size(d), MEM_OTHER, ctx.stream);
  nn_cast(&ctx, tensor_1d(x, d, n), tensor_1d(f, DTYPE_F32, n));
  device_free(ctx.device, f, ctx.stream);
  return x;
}

static int compare_ms(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

struct shape {
  enum dtype d;
  size_t B, T, NH, NKV, hd;
  void *q, *k, *v, *out, *lse, *dout, *dq, *dk, *dv;
};

static struct tensor heads(const struct shape *s, void *data, size_t H) {
  return tensor_4d(data, s->d, s->B, s->T, H, s->hd);
}
static struct tensor lse_of(const struct shape *s) {
  return (struct tensor){s->lse, DTYPE_F32, 3, {s->B, s->NH, s->T}};
}

static void forward(const struct shape *s) {
  nn_gqa_attention_forward(&ctx, tensor_2d(s->out, s->d, s->B * s->T, s->NH * s->hd), lse_of(s),
                           heads(s, s->q, s->NH), heads(s, s->k, s->NKV), heads(s, s->v, s->NKV));
}

static void backward(const struct shape *s) {
  nn_gqa_attention_backward(&ctx, heads(s, s->dq, s->NH), heads(s, s->dk, s->NKV), heads(s, s->dv, s->NKV),
                            NN_GRAD_SET, tensor_2d(s->dout, s->d, s->B * s->T, s->NH * s->hd), heads(s, s->q, s->NH),
                            heads(s, s->k, s->NKV), heads(s, s->v, s->NKV),
                            tensor_2d(s->out, s->d, s->B * s->T, s->NH * s->hd), lse_of(s));
}

static double median_ms(void (*run)(const struct shape *), const struct shape *s, int repeats) {
  double *ms = fsdp_xmalloc((size_t)repeats * sizeof *ms);
  run(s);
  stream_synchronize(ctx.stream);
  for (int r = 0; r < repeats; r++) {
    double t0 = time_now_ms();
    run(s);
    stream_synchronize(ctx.stream);
    ms[r] = time_now_ms() - t0;
  }
  qsort(ms, (size_t)repeats, sizeof *ms, compare_ms);
  double m = ms[repeats / 2];
  free(ms);
  return m;
}

int main(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr, "usage: attention cpu|cuda fp32|bf16|fp16 B T NH NKV HD REPEATS\n");
    return 2;
  }
  struct shape s = {0};
  int d = dtype_parse(argv[2]);
  if (d < 0) fsdp_fatal("attention: unknown dtype %s", argv[2]);
  s.d = (enum dtype)d;
  s.B = strtoul(argv[3], NULL, 10), s.T = strtoul(argv[4], NULL, 10), s.NH = strtoul(argv[5], NULL, 10);
  s.NKV = strtoul(argv[6], NULL, 10), s.hd = strtoul(argv[7], NULL, 10);
  int repeats = atoi(argv[8]);
  if (!s.B || !s.T || !s.NH || !s.NKV || s.NH % s.NKV || !s.hd || repeats < 1) fsdp_fatal("attention: bad shape");
  struct device *dev = strcmp(argv[1], "cuda") == 0 ? device_open(DEVICE_CUDA, DEVICE_CUDA) : device_cpu();
  ctx = (struct nn_ctx){dev, dev == device_cpu() ? device_host_stream_create(dev, "attention bench")
                                                  : device_stream_create(dev, "attention bench")};
  size_t nq = s.B * s.T * s.NH * s.hd, nkv = s.B * s.T * s.NKV * s.hd;
  s.q = normal(s.d, nq, 1), s.k = normal(s.d, nkv, 2), s.v = normal(s.d, nkv, 3), s.dout = normal(s.d, nq, 4);
  s.out = normal(s.d, nq, 5), s.dq = normal(s.d, nq, 6), s.dk = normal(s.d, nkv, 7), s.dv = normal(s.d, nkv, 8);
  s.lse = device_alloc(dev, s.B * s.NH * s.T * sizeof(float), MEM_OTHER, ctx.stream);
  double f = median_ms(forward, &s, repeats), b = median_ms(backward, &s, repeats);
  printf("%.3f %.3f\n", f, b);
  return 0;
}
