/* The cuda classifier's row, without a GPU: src/nn/cuda/classifier_row.h's steps, the very
 * functions classifier.cu calls, run here as a block of CLASSIFIER_THREADS threads runs them
 * (thread t takes the runs of W logits from t W on, a block's width apart; W 1, 4 and 8:
 * an element, and 16 bytes of fp32 or of 16-bit logits), against the CPU twin
 * (src/nn/cpu/classifier.c through nn_classifier). The review of 2026-11-28 found:
 *   item 1: a thread whose first run is all -inf summed exp(-inf - -inf) = NaN, and its
 *           finite terms then vanished from the row's sum: a finite, wrong loss;
 *   item 2: a target in the padding columns (V <= target < Vp) got -dloss there, where the
 *           CPU leaves 0.
 * Both are cases here. The GPU adds the threads' sums in a tree where this adds them in
 * order: losses agree within 1e-6, gradients within 2e-6 of dloss (both of fp32's rounding
 * of exp's terms); the padding is 0 exactly. nn_cuda_layers_test compares the kernel itself
 * with the CPU on a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "classifier_row.h"
#include "fsdp/device.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"

static struct nn_ctx cpu;

/* The GPU's loss and gradient of one row of Vp logits, its runs W wide. */
static void gpu_row(const float *x, int V, int Vp, int target, float dloss, int W, float *loss, float *d) {
  float maxval[CLASSIFIER_THREADS];
  double sum[CLASSIFIER_THREADS];
  float row_max = -INFINITY;
  for (int t = 0; t < CLASSIFIER_THREADS; t++) {
    maxval[t] = -INFINITY, sum[t] = 0.0;
    for (int j = t * W; j < V; j += CLASSIFIER_THREADS * W) {
      float run[8];
      for (int k = 0; k < W; k++) run[k] = j + k < Vp ? x[j + k] : 0.0f;
      classifier_run(&maxval[t], &sum[t], run, W, V - j);
    }
    row_max = fmaxf(row_max, maxval[t]);
  }
  double total = 0.0;
  for (int t = 0; t < CLASSIFIER_THREADS; t++) total += classifier_share(maxval[t], sum[t], row_max);
  *loss = classifier_loss(total, x[target], row_max);
  float scale = (float)(1.0 / total) * dloss;
  for (int j = 0; j < Vp; j++) d[j] = classifier_grad(x[j], j, V, target, row_max, scale, dloss);
}

static void cpu_row(const float *x, int V, int Vp, int target, float dloss, float *loss, float *d) {
  float *logits = malloc((size_t)Vp * sizeof *logits);
  memcpy(logits, x, (size_t)Vp * sizeof *logits);
  int targets[1] = {target};
  nn_classifier(&cpu, tensor_2d(d, DTYPE_F32, 1, (size_t)Vp), tensor_1d(loss, DTYPE_F32, 1),
                tensor_2d(logits, DTYPE_F32, 1, (size_t)Vp), tensor_1d(targets, DTYPE_I32, 1), V, dloss);
  free(logits);
}

/* Vp logits in [-4, 4): a vocabulary's, then its padding (never in the softmax). */
static float *row_of(int Vp, unsigned seed) {
  float *x = malloc((size_t)Vp * sizeof *x);
  for (int j = 0; j < Vp; j++) {
    seed = seed * 1664525u + 1013904223u;
    x[j] = (float)(seed >> 8) / (float)(1u << 24) * 8.0f - 4.0f;
  }
  return x;
}

static void compare(const char *what, const float *x, int V, int Vp, int target) {
  const float dloss = 0.125f;
  float *dg = malloc((size_t)Vp * sizeof *dg), *dc = malloc((size_t)Vp * sizeof *dc);
  for (int W = 1; W <= 8; W *= 2) {
    if (W == 2) continue;
    char context[160];
    snprintf(context, sizeof context, "%s, V %d of %d, target %d, runs of %d", what, V, Vp, target, W);
    check_context = context;
    float lg, lc;
    gpu_row(x, V, Vp, target, dloss, W, &lg, dg);
    cpu_row(x, V, Vp, target, dloss, &lc, dc);
    EXPECT(isfinite(lg) && fabsf(lg - lc) <= 1e-6f * fabsf(lc) + 1e-6f, "loss %.9g, the CPU's %.9g", lg, lc);
    int bad = -1;
    for (int j = 0; j < Vp && bad < 0; j++)
      if (!(fabsf(dg[j] - dc[j]) <= 2e-6f * dloss) || (j >= V && dg[j] != 0.0f)) bad = j;
    EXPECT(bad < 0, "column %d: %.9g, the CPU's %.9g", bad, bad < 0 ? 0.0 : dg[bad], bad < 0 ? 0.0 : dc[bad]);
    check_context = NULL;
  }
  free(dg);
  free(dc);
}

int main(void) {
  cpu = (struct nn_ctx){device_cpu(), device_host_stream_create(device_cpu(), "cuda_classifier_test")};
  const int V = 5000, Vp = 5008;
  float *x = row_of(Vp, 1);
  compare("random logits", x, V, Vp, 17);
  /* Item 1: every thread's first runs -inf (masked logits), finite ones after. */
  for (int j = 0; j < CLASSIFIER_THREADS * 8; j++) x[j] = -INFINITY;
  compare("the first runs -inf", x, V, Vp, 4500);
  /* Some threads see nothing above -inf at all, others some. */
  free(x);
  x = row_of(Vp, 2);
  for (int j = 0; j < V; j++)
    if (j % 97 != 0) x[j] = -INFINITY;
  compare("a few finite logits", x, V, Vp, 97);
  /* Item 2: a target in the padding (unreachable while token ids are checked against the
   * vocabulary): its column stays 0, the loss is taken from the padding logit, as the CPU's. */
  free(x);
  x = row_of(Vp, 3);
  compare("target in the padding", x, V, Vp, V + 3);
  compare("target the last padding column", x, V, Vp, Vp - 1);
  free(x);
  /* A vocabulary smaller than a block's width of runs, and one run's worth. */
  x = row_of(304, 4);
  compare("small vocabulary", x, 300, 304, 299);
  compare("small vocabulary, target in the padding", x, 300, 304, 301);
  free(x);
  x = row_of(8, 5);
  compare("one run", x, 5, 8, 0);
  free(x);
  stream_destroy(cpu.stream);
  return check_summary("cuda_classifier_test");
}
