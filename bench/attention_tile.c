/* The CPU attention's tile products four ways, on one thread: oneDNN's sgemm on compact
 * fp32 tiles (what src/nn/cpu/attention.c runs in fp32), OpenMP simd loops (the
 * compiler's vectors), oneDNN's bf16 matmul primitive reading q, k and v where a 16-bit
 * model keeps them (rows 3C = 1152 apart, GPT-2 at C 384; cached, fp32 out), and
 * tile_product on the same bf16 operands (what attention.c runs in 16 bits from AVX2
 * up), for a 64-row tile's scores q k^T (64 x 64 x hs) and its p v (64 x hs x 64), hs 16
 * to 128.
 * Timed in the thread's CPU time, so that other jobs on the core do not count.
 * usage: attention_tile [REPS]   (prints GFLOP/s of each, three rounds, docs/benchmarks.md) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fsdp/dtype.h"
#include "onednn.h"
#include "tile_product.h"

enum { TILE = 64, LD = 1152 };

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

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
  uint16_t *q16 = malloc(TILE * LD * sizeof *q16), *k16 = malloc(TILE * LD * sizeof *k16);
  uint16_t *p16 = malloc(TILE * TILE * sizeof *p16);
  for (int r = 0; r < TILE; r++) {
    dtype_pack(DTYPE_BF16, q + r * 128, q16 + r * LD, 128);
    dtype_pack(DTYPE_BF16, k + r * 128, k16 + r * LD, 128);
  }
  dtype_pack(DTYPE_BF16, k, p16, TILE * TILE);
  for (int hs = 16; hs <= 128; hs *= 2)
    for (int round = 0; round < 3; round++) {
      double t0 = cpu_ms();
      for (int i = 0; i < reps; i++) {
        onednn_sgemm(0, 1, TILE, TILE, hs, 1.0f, q, hs, k, hs, 0.0f, s, TILE);
        onednn_sgemm(0, 0, TILE, hs, TILE, 1.0f, s, TILE, k, hs, 1.0f, o, hs);
      }
      double t1 = cpu_ms();
      for (int i = 0; i < reps; i++) {
        loop_scores(s, q, k, hs);
        loop_values(o, s, k, hs);
      }
      double t2 = cpu_ms();
      struct onednn_matmul scores = {DTYPE_BF16, 1, onednn_matrix_rows(TILE, hs, LD), onednn_transposed_rows(TILE, hs, LD),
                                     onednn_matrix(TILE, TILE), 0, 0};
      struct onednn_matmul values = {DTYPE_BF16, 1, onednn_matrix(TILE, TILE), onednn_matrix_rows(TILE, hs, LD),
                                     onednn_matrix(TILE, hs), 0, 1};
      for (int i = 0; i < reps; i++) {
        onednn_matmul_alone(&scores, q16, k16, NULL, s);
        onednn_matmul_alone(&values, p16, k16, NULL, o);
      }
      double t3 = cpu_ms();
      for (int i = 0; tile_product_runs() && i < reps; i++) {
        tile_product(DTYPE_BF16, TILE, TILE, hs, (struct operand){q16, LD, 0}, (struct operand){k16, LD, 1}, 0, s, TILE);
        tile_product(DTYPE_BF16, TILE, hs, TILE, (struct operand){p16, TILE, 0}, (struct operand){k16, LD, 0}, 1, o, hs);
      }
      double t4 = cpu_ms(), flop = 4.0 * TILE * TILE * hs * reps;
      printf("hs %3d  sgemm %6.1f GFLOP/s  loops %6.1f GFLOP/s  bf16 primitive %6.1f GFLOP/s  tile_product %6.1f "
             "GFLOP/s\n", hs, flop / (t1 - t0) / 1e6, flop / (t2 - t1) / 1e6, flop / (t3 - t2) / 1e6,
             tile_product_runs() ? flop / (t4 - t3) / 1e6 : 0.0);
    }
  free(q), free(k), free(s), free(o), free(q16), free(k16), free(p16);
  return 0;
}
