/* What GPT-2's and Llama's decode steps share (fsdp/decoder.h): the KV cache, views of
 * the few rows a step runs, and the logits of its last position. */
#include <stdlib.h>

#include "fsdp/decoder.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"

static size_t kv_width(const struct decoder *d) {
  return (size_t)d->config.n_kv_head * (size_t)(d->config.n_embd / d->config.n_head);
}

struct kv_cache *decoder_cache_create(const struct decoder *d, int max_len) {
  FSDP_CHECK(max_len >= 1 && max_len <= d->config.max_seq_len);
  int L = d->config.n_layer;
  struct kv_cache *cache = fsdp_xcalloc(1, sizeof *cache);
  cache->max_len = max_len;
  cache->k = fsdp_xcalloc((size_t)L, sizeof *cache->k);
  cache->v = fsdp_xcalloc((size_t)L, sizeof *cache->v);
  for (int l = 0; l < L; l++) {
    cache->k[l] = decoder_alloc(d, (size_t)max_len * kv_width(d));
    cache->v[l] = decoder_alloc(d, (size_t)max_len * kv_width(d));
  }
  return cache;
}

void decoder_cache_free(const struct decoder *d, struct kv_cache *cache) {
  for (int l = 0; l < d->config.n_layer; l++) {
    decoder_release(d, &cache->k[l]);
    decoder_release(d, &cache->v[l]);
  }
  free(cache->k);
  free(cache->v);
  free(cache);
}

struct tensor decoder_cache_new(const struct decoder *d, const struct kv_cache *cache, void *buffer, int n) {
  FSDP_CHECK(n >= 1 && cache->len + n <= cache->max_len);
  char *first = (char *)buffer + (size_t)cache->len * kv_width(d) * dtype_size(d->dtype);
  return tensor_2d(first, d->dtype, (size_t)n, kv_width(d));
}

struct tensor decoder_cache_all(const struct decoder *d, const struct kv_cache *cache, void *buffer, int n) {
  size_t hd = (size_t)(d->config.n_embd / d->config.n_head);
  return (struct tensor){buffer, d->dtype, 3, {(size_t)(cache->len + n), (size_t)d->config.n_kv_head, hd}};
}

struct tensor decoder_upload_tokens(const struct decoder *d, const int *tokens, int n) {
  struct stream *compute = d->fsdp->streams.compute;
  int *ids = device_alloc(d->fsdp->device, (size_t)n * sizeof(int), MEM_ACTIVATIONS, compute);
  device_copy_to_device(compute, ids, tokens, (size_t)n * sizeof(int));
  return tensor_2d(ids, DTYPE_I32, 1, (size_t)n);
}

struct tensor decoder_rows(const struct decoder *d, void *data, int n, size_t cols) {
  return tensor_2d(data, d->dtype, (size_t)n, cols);
}

struct tensor decoder_param_rows(struct tensor t, size_t first, size_t n) {
  size_t cols = t.ndim == 2 ? t.shape[1] : 1;
  struct tensor rows = tensor_slice(&t, first * cols, n * cols);
  return t.ndim == 2 ? tensor_2d(rows.data, t.dtype, n, cols) : rows;
}

/* The compute dtype's logits are widened to fp32 on the device (a GPU's are 16-bit). */
void decoder_logits_to_host(const struct decoder *d, struct tensor head, void *final, float *logits) {
  size_t C = (size_t)d->config.n_embd, V = (size_t)d->config.vocab_size;
  struct nn_ctx k = decoder_ctx(d);
  void *out = decoder_alloc(d, V);
  nn_matmul_forward(&k, decoder_rows(d, out, 1, V), decoder_rows(d, final, 1, C), head, TENSOR_NONE);
  void *wide = out;
  if (d->dtype != DTYPE_F32) {
    wide = device_alloc(d->fsdp->device, V * sizeof(float), MEM_ACTIVATIONS, k.stream);
    nn_cast(&k, tensor_1d(wide, DTYPE_F32, V), tensor_1d(out, d->dtype, V));
  }
  device_copy_to_host(k.stream, logits, wide, V * sizeof(float));
  stream_synchronize(k.stream);
  if (wide != out) device_free(d->fsdp->device, wide, k.stream);
  decoder_release(d, &out);
}

void decoder_decode_done(struct decoder *d, struct kv_cache *cache, int n) {
  cache->len += n;
  /* The forward's last use stays gathered for a backward; a decode step has none. */
  fsdp_model_reshard_all(d->fsdp);
}
