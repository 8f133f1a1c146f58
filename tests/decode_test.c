/* KV-cache decoding equals the full forward: for each of tests/test_models.h's models
 * (GPT-2, Llama 3 with GQA, MHA and a tied head), the logits of every position the
 * cached path computes (a prefill of 5 tokens, a step of 3, then one token at a time up
 * to max_seq_len) match the training forward's logits of the same sequence within 1e-5,
 * with each module a unit (the hooks around every module) and with one unit for all. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/rng.h"
#include "test_models.h"

enum { T = TEST_MODEL_SEQ, PREFILL = 5, CHUNK = 3 };
static const uint64_t SEED = 777;
static const double TOLERANCE = 1e-5;

/* The largest |cached - full| over one position's logits; full's rows are Vp wide, the
 * vocabulary padded (fsdp/decoder.h). */
static double compare_last(const float *cached, const float *full, int position, int V, int Vp) {
  double worst = 0.0;
  for (int v = 0; v < V; v++) {
    double e = fabs((double)cached[v] - (double)full[(size_t)position * Vp + v]);
    worst = e > worst ? e : worst;
  }
  return worst;
}

static int check_model(const struct test_model *tm, const struct fsdp_wrap_policy *wrap, const char *wrap_name) {
  int V = tm->config.vocab_size;
  struct fsdp_model m;
  struct fsdp_mixed_precision mp = {.param_dtype = DTYPE_F32, .reduce_dtype = DTYPE_F32};
  fsdp_model_init(&m, device_cpu(), comm_self(), SHARD_FULL, NULL, &mp);
  void *model = tm->family->create(&tm->config, &m, 1, T, 0);
  fsdp_model_wrap(&m, wrap);
  fsdp_model_init_params(&m, SEED);
  struct decoder *d = model; /* every family's struct starts with its decoder */
  d->keep_logits = 1;

  int tokens[T], targets[T];
  for (int t = 0; t < T; t++) {
    tokens[t] = (int)rng_below(SEED, 1, (uint64_t)t, (uint64_t)V);
    targets[t] = (int)rng_below(SEED, 2, (uint64_t)t, (uint64_t)V);
  }
  tm->family->forward(model, tokens, targets);
  int Vp = d->vocab_padded;
  float *full = malloc((size_t)T * Vp * sizeof(float)), *cached = malloc((size_t)V * sizeof(float));
  device_copy_to_host(m.streams.compute, full, d->logits, (size_t)T * Vp * sizeof(float));
  stream_synchronize(m.streams.compute);
  tm->family->release_activations(model);
  fsdp_model_reshard_all(&m);

  struct kv_cache *cache = tm->family->cache_create(model, T);
  double worst = 0.0;
  for (int first = 0, n = PREFILL; first < T; first += n, n = first == PREFILL ? CHUNK : 1) {
    tm->family->decode(model, cache, tokens + first, n, cached);
    double e = compare_last(cached, full, first + n - 1, V, Vp);
    worst = e > worst ? e : worst;
  }
  int ok = worst <= TOLERANCE && cache->len == T;
  printf("%-12s wrap %-5s cached vs full forward over %d positions: max abs err %.3g, %s\n", tm->name, wrap_name,
         T, worst, ok ? "ok" : "FAIL");
  tm->family->cache_free(model, cache);
  free(full);
  free(cached);
  tm->family->free(model);
  fsdp_model_free(&m);
  return ok;
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  int ok = 1;
  const struct fsdp_wrap_policy one_unit = {WRAP_NONE, 0, RESHARD_AUTO};
  for (size_t i = 0; i < sizeof TEST_MODELS / sizeof TEST_MODELS[0]; i++) {
    ok &= check_model(&TEST_MODELS[i], &FSDP_WRAP_DEFAULT, "block");
    ok &= check_model(&TEST_MODELS[i], &one_unit, "none");
  }
  comm_finalize();
  return ok ? 0 : 1;
}
