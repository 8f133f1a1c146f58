/* GFLOP/s of fsdp.c's CPU matmul (nn_matmul_forward and nn_matmul_backward: the
 * forward, dinp (overwritten, as the models' backward does) and dweight (accumulated)
 * products, bias included) on the linear layers of a GPT-2
 * step: per block qkv (C -> 3C), attention projection (C -> C), MLP up (C -> 4C) and
 * down (4C -> C), then the LM head (C -> V). Prints one line per product and a JSON
 * summary line: total FLOP of a step's products over their total time.
 *
 * Usage: cpu_matmul [--rows N] [--n-embd C] [--n-layer L] [--vocab-size V] [--dtype fp32|bf16|fp16]
 *                   [--seconds S]   (defaults: shakespeare-char at B=8, T=256: 2048 384 6 256 fp32 0.3)
 * Threads: OMP_NUM_THREADS. Each product's figure is its median over runs lasting S seconds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/nn.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static struct nn_ctx cpu;

/* Small values in any float dtype: 1/64 in fp32, bf16 or fp16 (0x3c800000, 0x3c80, 0x2400). */
static void *filled(enum dtype d, size_t n) {
  void *x = fsdp_xmalloc(n * dtype_size(d));
  for (size_t i = 0; i < n; i++) {
    if (d == DTYPE_F32) ((float *)x)[i] = 1.0f / 64;
    else ((uint16_t *)x)[i] = d == DTYPE_BF16 ? 0x3c80 : 0x2400;
  }
  return x;
}

enum product { FORWARD, DINP, DWEIGHT, PRODUCTS };
static const char *product_name[PRODUCTS] = {"forward", "dinp", "dweight"};

/* Median seconds of one product on (N, C) -> (N, OC). The backward runs one product
 * at a time (the others' outputs absent); dweight carries the bias gradient, as a
 * step's backward does. */
static double time_product(enum product p, enum dtype d, int N, int C, int OC, double seconds) {
  void *inp = filled(d, (size_t)N * C), *weight = filled(d, (size_t)OC * C), *bias = filled(d, OC);
  void *out = filled(d, (size_t)N * OC), *dinp = filled(d, (size_t)N * C), *dweight = filled(d, (size_t)OC * C);
  struct tensor tinp = tensor_2d(inp, d, N, C), tweight = tensor_2d(weight, d, OC, C), tbias = tensor_1d(bias, d, OC);
  struct tensor tout = tensor_2d(out, d, N, OC);
  enum { MAX_RUNS = 400 };
  double t[MAX_RUNS], start = 0;
  int n = 0;
  for (int run = -2; n < MAX_RUNS && (n < 3 || now_s() - start < seconds); run++) { /* 2 runs of warm-up */
    if (run == 0) start = now_s();
    double t0 = now_s();
    if (p == FORWARD)
      nn_matmul_forward(&cpu, tout, tinp, tweight, tbias);
    else
      nn_matmul_backward(&cpu, p == DINP ? tensor_2d(dinp, d, N, C) : TENSOR_NONE, NN_GRAD_SET,
                         p == DWEIGHT ? tensor_2d(dweight, d, OC, C) : TENSOR_NONE,
                         p == DWEIGHT ? tensor_1d(bias, d, OC) : TENSOR_NONE, tout, tinp, tweight);
    if (run >= 0) t[n++] = now_s() - t0;
  }
  qsort(t, n, sizeof t[0], cmp_double);
  free(inp), free(weight), free(bias), free(out), free(dinp), free(dweight);
  return t[n / 2];
}

int main(int argc, char **argv) {
  int N = 2048, C = 384, L = 6, V = 256;
  enum dtype d = DTYPE_F32;
  double seconds = 0.3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rows")) N = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--n-embd")) C = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--n-layer")) L = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--vocab-size")) V = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--dtype") && dtype_parse(argv[i + 1]) >= 0) d = (enum dtype)dtype_parse(argv[i + 1]);
    else fsdp_fatal("cpu_matmul: unknown argument %s %s (see the top of bench/cpu_matmul.c)", argv[i], argv[i + 1]);
  }
  cpu = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "kernels")};
  struct {
    const char *name;
    int in, out, count;
  } layers[] = {{"qkv", C, 3 * C, L}, {"attproj", C, C, L}, {"fc", C, 4 * C, L}, {"fcproj", 4 * C, C, L},
                {"lm_head", C, V, 1}};
  double flop = 0, secs = 0;
  for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
    for (int p = 0; p < PRODUCTS; p++) {
      double s = time_product((enum product)p, d, N, layers[l].in, layers[l].out, seconds);
      double f = 2.0 * N * layers[l].in * layers[l].out;
      flop += f * layers[l].count, secs += s * layers[l].count;
      printf("%s %s %s (%d x %d -> %d): %.3f ms, %.0f GFLOP/s\n", dtype_name(d), layers[l].name, product_name[p], N,
             layers[l].in, layers[l].out, s * 1e3, f / s * 1e-9);
    }
  printf("{\"impl\": \"fsdp.c\", \"dtype\": \"%s\", \"threads\": %d, \"gflop\": %.3f, \"ms\": %.3f, \"gflops\": %.1f}\n",
         dtype_name(d), nn_num_threads(), flop * 1e-9, secs * 1e3, flop / secs * 1e-9);
  return 0;
}
