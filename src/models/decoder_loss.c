/* The loss of a decoder: the head's product and the fused classifier (nn_classifier), a
 * chunk of tokens at a time, so that the head never holds more than a chunk's logits
 * (docs/architecture.md, "The loss"):
 *   forward:  for each chunk: logits = final[chunk] @ head^T; losses[chunk] from them
 *   backward: for each chunk: the logits again; dlogits in their place;
 *             d_final[chunk] += dlogits @ head, dhead += dlogits^T @ final[chunk]
 * The backward computes the logits a second time (one more product of the head's three)
 * rather than keep N x V of anything between the forward and the backward. The products
 * run on rows of vocab_padded: where the vocabulary is not a multiple of it, on a copy of
 * the head with zero rows after (and of dhead, copied back after the last chunk). */
#include <stdint.h>

#include "fsdp/decoder.h"
#include "fsdp/device.h"
#include "fsdp/error.h"

static const size_t LOSS_CHUNK_ELEMENTS = (size_t)1 << 26;

size_t decoder_loss_chunk(const struct decoder *d) {
  size_t N = (size_t)d->B * d->T, chunk = d->loss_chunk ? (size_t)d->loss_chunk : LOSS_CHUNK_ELEMENTS / d->vocab_padded;
  if (chunk < 1) chunk = 1;
  return chunk < N ? chunk : N;
}

/* rows [first, first + n) of an (N, cols) activation in the compute dtype. */
static struct tensor rows_of(const struct decoder *d, void *data, size_t first, size_t n, size_t cols) {
  return tensor_2d((char *)data + first * cols * dtype_size(d->dtype), d->dtype, n, cols);
}

/* m (vocab_size, C) as (vocab_padded, C): m itself where they are the same, else a new
 * buffer with m's rows first and zero rows after. */
static void *padded(const struct decoder *d, struct tensor m) {
  size_t C = (size_t)d->config.n_embd, V = (size_t)d->config.vocab_size, Vp = (size_t)d->vocab_padded;
  if (Vp == V) return m.data;
  void *p = decoder_alloc(d, Vp * C);
  device_copy(d->fsdp->streams.compute, p, m.data, decoder_bytes(d, V * C));
  decoder_zero(d, (char *)p + decoder_bytes(d, V * C), (Vp - V) * C);
  return p;
}

static void release_padded(const struct decoder *d, struct tensor m, void *p) {
  if (p != m.data) decoder_release(d, &p);
}

void decoder_loss_forward(struct decoder *d, struct tensor head, void *final) {
  size_t N = (size_t)d->B * d->T, C = (size_t)d->config.n_embd, Vp = (size_t)d->vocab_padded;
  size_t chunk = decoder_loss_chunk(d);
  struct nn_ctx k = decoder_ctx(d);
  void *head_p = padded(d, head);
  struct tensor head_t = tensor_2d(head_p, d->dtype, Vp, C);
  /* With keep_logits every chunk has rows of its own; else each reuses the first's. */
  d->logits = decoder_alloc(d, (d->keep_logits ? N : chunk) * Vp);
  d->losses = decoder_alloc_stats(d, N);
  for (size_t first = 0; first < N; first += chunk) {
    size_t n = N - first < chunk ? N - first : chunk;
    struct tensor logits = rows_of(d, d->logits, d->keep_logits ? first : 0, n, Vp);
    nn_matmul_forward(&k, logits, rows_of(d, final, first, n, C), head_t, TENSOR_NONE);
    nn_classifier(&k, TENSOR_NONE, tensor_1d((float *)d->losses + first, DTYPE_F32, n), logits,
                  tensor_1d(d->targets + first, DTYPE_I32, n), d->config.vocab_size, 0.0f);
  }
  release_padded(d, head, head_p);
  if (!d->keep_logits) decoder_release(d, &d->logits);
}

void decoder_add_loss(struct decoder *d) {
  struct nn_ctx k = decoder_ctx(d);
  nn_sum(&k, tensor_1d(d->loss_sum, DTYPE_F64, 1), decoder_stats(d, d->losses));
  d->loss_forwards++;
}

double decoder_take_loss(struct decoder *d) {
  FSDP_CHECK(d->loss_forwards > 0);
  struct stream *s = d->fsdp->streams.compute;
  double sum = 0.0;
  device_copy_to_host(s, &sum, d->loss_sum, sizeof sum);
  stream_synchronize(s);
  device_memset(s, d->loss_sum, 0, sizeof(double));
  double tokens = (double)d->loss_forwards * d->B * d->T;
  d->loss_forwards = 0;
  return sum / tokens;
}

void *decoder_loss_backward(struct decoder *d, float loss_scale, struct tensor head, struct tensor dhead, void *final) {
  size_t N = (size_t)d->B * d->T, C = (size_t)d->config.n_embd, Vp = (size_t)d->vocab_padded;
  size_t chunk = decoder_loss_chunk(d);
  struct nn_ctx k = decoder_ctx(d);
  FSDP_CHECK(d->losses != NULL);
  decoder_release(d, &d->logits);
  decoder_release(d, &d->losses);
  void *head_p = padded(d, head), *dhead_p = dhead.data ? padded(d, dhead) : NULL;
  struct tensor head_t = tensor_2d(head_p, d->dtype, Vp, C);
  struct tensor dhead_t = dhead_p ? tensor_2d(dhead_p, d->dtype, Vp, C) : TENSOR_NONE;
  void *d_final = decoder_alloc(d, N * C);
  d->logits = decoder_alloc(d, chunk * Vp);
  for (size_t first = 0; first < N; first += chunk) {
    size_t n = N - first < chunk ? N - first : chunk;
    struct tensor logits = tensor_2d(d->logits, d->dtype, n, Vp), inp = rows_of(d, final, first, n, C);
    nn_matmul_forward(&k, logits, inp, head_t, TENSOR_NONE);
    nn_classifier(&k, logits, TENSOR_NONE, logits, tensor_1d(d->targets + first, DTYPE_I32, n),
                  d->config.vocab_size, loss_scale / (float)N);
    nn_matmul_backward(&k, rows_of(d, d_final, first, n, C), NN_GRAD_SET, dhead_t, TENSOR_NONE, logits, inp, head_t);
  }
  decoder_release(d, &d->logits);
  if (dhead_p != dhead.data) {
    device_copy(k.stream, dhead.data, dhead_p, decoder_bytes(d, (size_t)d->config.vocab_size * C));
    decoder_release(d, &dhead_p);
  }
  release_padded(d, head, head_p);
  return d_final;
}
