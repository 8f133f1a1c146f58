/* The CPU attention's tile products two ways, on one thread: oneDNN's sgemm (what
 * src/nn/cpu/attention.c runs) against OpenMP simd loops (the compiler's AVX-512), for
 * a 64-row tile's scores q k^T (64 x 64 x hs) and its p v (64 x hs x 64), hs 16 to 128.
 * usage: attention_tile [REPS]   (prints GFLOP/s of each, three rounds, docs/benchmarks.md) */
#include <stdio.h>
#include <stdlib.h>

#include "fsdp/timer.h"
#include "onednn.h"

enum { TILE = 64 };

static void loop_scores(float *s, const float *q, const float *k, int hs) {
  for (int r = 0; r < TILE; r++)
    for (int c = 0; c < TILE; c++) {
      float d = 0.0f;
#pragma omp simd reduction(+ : d)
      for (int e = 0; e < hs; e++) d += q[r * hs + e] * k[c * hs + e];
      s[r * TILE + c] = d;
    }
}

static void loop_values(float *o, const float *p, const float *v, int hs) {
  for (int r = 0; r < TILE; r++)
    for (int c = 0; c < TILE; c++) {
      float w = p[r * TILE + c];
#pragma omp simd
      for (int e = 0; e < hs; e++) o[r * hs + e] += w * v[c * hs + e];
    }
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 2000;
  float *q = malloc(TILE * 128 * sizeof *q), *k = malloc(TILE * 128 * sizeof *k);
  float *s = malloc(TILE * TILE * sizeof *s), *o = calloc(TILE * 128, sizeof *o);
  for (int i = 0; i < TILE * 128; i++) q[i] = (float)(i % 7) * 0.1f, k[i] = (float)(i % 5) * 0.1f;
  for (int hs = 16; hs <= 128; hs *= 2)
    for (int round = 0; round < 3; round++) {
      double t0 = time_now_ms();
      for (int i = 0; i < reps; i++) {
        onednn_sgemm(0, 1, TILE, TILE, hs, 1.0f, q, hs, k, hs, 0.0f, s, TILE);
        onednn_sgemm(0, 0, TILE, hs, TILE, 1.0f, s, TILE, k, hs, 1.0f, o, hs);
      }
      double t1 = time_now_ms();
      for (int i = 0; i < reps; i++) {
        loop_scores(s, q, k, hs);
        loop_values(o, s, k, hs);
      }
      double t2 = time_now_ms(), flop = 4.0 * TILE * TILE * hs * reps;
      printf("hs %3d  sgemm %6.1f GFLOP/s  loops %6.1f GFLOP/s\n", hs, flop / (t1 - t0) / 1e6, flop / (t2 - t1) / 1e6);
    }
  free(q), free(k), free(s), free(o);
  return 0;
}
