#include "fsdp/sampler.h"

#include <math.h>
#include <stdlib.h>

#include "fsdp/error.h"
#include "fsdp/rng.h"

/* The draws' Philox stream, apart from the initialisation's (module, parameter) streams. */
static const uint64_t SAMPLE_STREAM = UINT64_C(0x73616d706c65); /* "sample" */

struct ranked {
  float logit;
  int id;
};

void sampler_init(struct sampler *s, int vocab_size, float temperature, int top_k, uint64_t seed) {
  *s = (struct sampler){temperature, top_k, seed, 0, vocab_size, NULL};
  s->ranked = fsdp_xcalloc((size_t)vocab_size, sizeof *s->ranked);
}

void sampler_free(struct sampler *s) { free(s->ranked); }

static int argmax(const float *logits, int V) {
  int best = 0;
  for (int i = 1; i < V; i++)
    if (logits[i] > logits[best]) best = i;
  return best;
}

/* Larger logits first, and the lower id first among equal ones. */
static int by_rank(const void *a, const void *b) {
  const struct ranked *x = a, *y = b;
  if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
  return x->id - y->id;
}

/* A uniform double in [0, 1) from the 53 high bits of one Philox block. */
static double uniform(uint64_t seed, uint64_t index) {
  uint32_t r[4];
  philox4x32(seed, SAMPLE_STREAM, index, r);
  return (double)(((uint64_t)r[0] << 21) ^ (r[1] >> 11)) * 0x1p-53;
}

/* p_i = exp((l_i - max l) / T) over the candidates (every id, or the top k ranked),
 * then the first candidate whose running sum passes u times the total. */
int sampler_next(struct sampler *s, const float *logits) {
  int V = s->vocab_size;
  for (int i = 0; i < V; i++)
    if (!isfinite(logits[i]))
      fsdp_fatal("sample: the logit of token %d is %s: the model's weights hold a NaN or an infinity, or its "
                 "activations overflowed",
                 i, isnan(logits[i]) ? "NaN" : "infinite");
  if (s->temperature == 0.0f) return argmax(logits, V);
  int n = V;
  for (int i = 0; i < V; i++) s->ranked[i] = (struct ranked){logits[i], i};
  if (s->top_k > 0 && s->top_k < V) {
    qsort(s->ranked, (size_t)V, sizeof *s->ranked, by_rank);
    n = s->top_k;
  }
  float max = logits[argmax(logits, V)];
  double total = 0.0;
  for (int i = 0; i < n; i++) total += exp(((double)s->ranked[i].logit - max) / s->temperature);
  double target = uniform(s->seed, s->draws++) * total, sum = 0.0;
  for (int i = 0; i < n; i++) {
    sum += exp(((double)s->ranked[i].logit - max) / s->temperature);
    if (sum > target) return s->ranked[i].id;
  }
  return s->ranked[n - 1].id; /* u * total rounded up to the sum */
}
