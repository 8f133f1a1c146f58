#include <stddef.h>
#include <stdlib.h>

#include "typed.h"

/* out[b,t,:] = wte[inp[b,t],:] + wpe[t,:], or without wpe (absent) the token's row alone. */
static void encoder_forward(struct tensor out, const int *inp, struct tensor wte, struct tensor wpe, int B, int T,
                            int C) {
#pragma omp parallel
  {
    float *buf = span_scratch(out.dtype, 3 * (size_t)C);
#pragma omp for
    for (int bt = 0; bt < B * T; bt++) {
      float *o = span_out(out, (size_t)bt * C, buf);
      const float *we = span_in(wte, (size_t)inp[bt] * C, (size_t)C, scratch_at(buf, (size_t)C));
      const float *pe = wpe.data ? span_in(wpe, (size_t)(bt % T) * C, (size_t)C, scratch_at(buf, 2 * (size_t)C)) : NULL;
      for (int c = 0; c < C; c++) o[c] = pe ? we[c] + pe[c] : we[c];
      span_store(out, (size_t)bt * C, (size_t)C, o);
    }
  }
}

/* dwte[inp[b,t],:] += dout[b,t,:]. A token may repeat: its positions are grouped (a
 * counting sort over the V tokens keeps each group in position order), and the task of
 * a token adds all its rows of dout in that order and stores its row of dwte once; so a
 * 16-bit dwte is rounded once, and every sum is the one a serial loop over the positions
 * forms. */
static void encoder_backward_wte(struct tensor dwte, struct tensor dout, const int *inp, int N, int C) {
  int V = dim(dwte, 0);
  int *end = fsdp_xcalloc((size_t)V + 1, sizeof *end), *order = fsdp_xmalloc((size_t)N * sizeof *order);
  for (int i = 0; i < N; i++) end[inp[i] + 1]++;
  for (int v = 0; v < V; v++) end[v + 1] += end[v];
  /* end[v] starts as token v's first slot and ends one past its last. */
  for (int i = 0; i < N; i++) order[end[inp[i]]++] = i;
#pragma omp parallel
  {
    float *buf = span_scratch(dwte.dtype, 2 * (size_t)C);
#pragma omp for schedule(dynamic, 64)
    for (int v = 0; v < V; v++) {
      int first = v ? end[v - 1] : 0;
      if (first == end[v]) continue;
      size_t row = (size_t)v * C;
      float *acc = span_inout(dwte, row, (size_t)C, buf);
      for (int j = first; j < end[v]; j++) {
        const float *d = span_in(dout, (size_t)order[j] * C, (size_t)C, scratch_at(buf, (size_t)C));
        for (int c = 0; c < C; c++) acc[c] += d[c];
      }
      span_store(dwte, row, (size_t)C, acc);
    }
  }
  free(end);
  free(order);
}

/* dwpe[t,:] += sum_b dout[b,t,:], b in order. */
static void encoder_backward_wpe(struct tensor dwpe, struct tensor dout, int B, int T, int C) {
#pragma omp parallel
  {
    float *buf = span_scratch(dwpe.dtype, 2 * (size_t)C);
#pragma omp for
    for (int t = 0; t < T; t++) {
      float *acc = span_inout(dwpe, (size_t)t * C, (size_t)C, buf);
      for (int b = 0; b < B; b++) {
        const float *d = span_in(dout, ((size_t)b * T + t) * C, (size_t)C, scratch_at(buf, (size_t)C));
        for (int c = 0; c < C; c++) acc[c] += d[c];
      }
      span_store(dwpe, (size_t)t * C, (size_t)C, acc);
    }
  }
}

void cpu_encoder_forward(void *p) {
  const struct encoder_args *a = p;
  encoder_forward(a->out, i32(a->inp), a->wte, a->wpe, dim(a->inp, 0), dim(a->inp, 1), dim(a->wte, 1));
}

void cpu_encoder_backward(void *p) {
  const struct encoder_backward_args *a = p;
  int B = dim(a->inp, 0), T = dim(a->inp, 1), C = cols(a->dout);
  if (a->dwte.data) encoder_backward_wte(a->dwte, a->dout, i32(a->inp), B * T, C);
  if (a->dwpe.data) encoder_backward_wpe(a->dwpe, a->dout, B, T, C);
}
