#include "fsdp/decoder.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/memory.h"

const char *decoder_config_problem(const struct model_config *c) {
  static char message[160];
  if (c->n_layer < 1) return "--n-layer must be at least 1";
  if (c->n_head < 1) return "--n-head must be at least 1";
  if (c->n_embd < 1) return "--n-embd must be at least 1";
  if (c->vocab_size < 1) return "--vocab-size must be at least 1";
  /* Padded up to whole rows of DECODER_VOCAB_ALIGN, it must still be an int. */
  if (c->vocab_size > INT_MAX / DECODER_VOCAB_ALIGN * DECODER_VOCAB_ALIGN) {
    snprintf(message, sizeof message, "--vocab-size %d is too large: at most %d", c->vocab_size,
             INT_MAX / DECODER_VOCAB_ALIGN * DECODER_VOCAB_ALIGN);
    return message;
  }
  if (c->max_seq_len < 1) return "the model's maximum sequence length must be at least 1";
  if (c->n_embd % c->n_head != 0) {
    snprintf(message, sizeof message, "--n-embd %d is not divisible by --n-head %d", c->n_embd, c->n_head);
    return message;
  }
  return NULL;
}

const char *decoder_batch_problem(int B, int T, const char *flag, int value, size_t widest) {
  static char message[200];
  /* The kernels take element counts such as N * 4C as int. */
  size_t elements = (size_t)B * (size_t)T * widest;
  if (elements > INT_MAX) {
    snprintf(message, sizeof message,
             "a batch of %d x %d tokens at %s %d makes activations of %zu elements, more than %d: "
             "lower --batch-size or --seq-len",
             B, T, flag, value, elements, INT_MAX);
    return message;
  }
  return NULL;
}

void decoder_init(struct decoder *d, const struct model_config *config, struct fsdp_model *fsdp, int B, int T,
                  int ac_every) {
  FSDP_CHECK(fsdp->n_units == 0 && ac_every >= 0 && B >= 1 && T >= 1 && T <= config->max_seq_len);
  d->config = *config;
  d->B = B;
  d->T = T;
  d->ac_every = ac_every;
  d->fsdp = fsdp;
  d->dtype = nn_compute_dtype(fsdp->device, fsdp->mp.param_dtype);
  d->vocab_padded = (config->vocab_size + DECODER_VOCAB_ALIGN - 1) / DECODER_VOCAB_ALIGN * DECODER_VOCAB_ALIGN;
  d->blocks = fsdp_xcalloc((size_t)config->n_layer, sizeof *d->blocks);
  d->embedding = d->final_norm = d->output = -1;
  struct stream *compute = fsdp->streams.compute;
  d->inputs = device_alloc(fsdp->device, (size_t)B * T * sizeof(int), MEM_ACTIVATIONS, compute);
  d->targets = device_alloc(fsdp->device, (size_t)B * T * sizeof(int), MEM_ACTIVATIONS, compute);
  d->loss_sum = device_alloc(fsdp->device, sizeof(double), MEM_ACTIVATIONS, compute);
  device_memset(compute, d->loss_sum, 0, sizeof(double));
}

void decoder_free(struct decoder *d) {
  struct stream *compute = d->fsdp->streams.compute;
  device_free(d->fsdp->device, d->inputs, compute);
  device_free(d->fsdp->device, d->targets, compute);
  device_free(d->fsdp->device, d->loss_sum, compute);
  free(d->blocks);
}

void decoder_add_block(struct decoder *d, int l, const char *block_prefix, const struct param_spec *specs,
                       int n_params) {
  char name[32], prefix[32];
  snprintf(name, sizeof name, "block %d", l);
  snprintf(prefix, sizeof prefix, "%s%d.", block_prefix, l);
  d->blocks[l] = fsdp_model_add_module(d->fsdp, name, prefix, specs, n_params);
}

struct tensor decoder_param(const struct decoder *d, int module, int param) {
  return fsdp_param(d->fsdp, module, param);
}

struct tensor decoder_grad(const struct decoder *d, int module, int param) {
  return fsdp_grad(d->fsdp, module, param);
}

int decoder_is_checkpointed(const struct decoder *d, int layer) {
  return d->ac_every > 0 && (layer + 1) % d->ac_every == 0;
}

struct nn_ctx decoder_ctx(const struct decoder *d) {
  return (struct nn_ctx){d->fsdp->device, d->fsdp->streams.compute};
}

size_t decoder_bytes(const struct decoder *d, size_t elements) { return elements * dtype_size(d->dtype); }

size_t decoder_stats_bytes(size_t elements) { return elements * sizeof(float); }

void *decoder_alloc_bytes(const struct decoder *d, size_t bytes) {
  return device_alloc(d->fsdp->device, bytes, MEM_ACTIVATIONS, d->fsdp->streams.compute);
}

void *decoder_alloc(const struct decoder *d, size_t elements) { return decoder_alloc_bytes(d, decoder_bytes(d, elements)); }

void *decoder_alloc_stats(const struct decoder *d, size_t elements) {
  return decoder_alloc_bytes(d, decoder_stats_bytes(elements));
}

void decoder_release(const struct decoder *d, void **buffer) {
  device_free(d->fsdp->device, *buffer, d->fsdp->streams.compute);
  *buffer = NULL;
}

void decoder_release_all(const struct decoder *d, void **const buffers[], size_t n) {
  for (size_t i = 0; i < n; i++) decoder_release(d, buffers[i]);
}

void decoder_zero(const struct decoder *d, void *buffer, size_t elements) {
  device_memset(d->fsdp->streams.compute, buffer, 0, elements * dtype_size(d->dtype));
}

struct tensor decoder_act2(const struct decoder *d, void *data, size_t cols) {
  return tensor_2d(data, d->dtype, (size_t)d->B * d->T, cols);
}

struct tensor decoder_stats(const struct decoder *d, void *data) {
  return tensor_1d(data, DTYPE_F32, (size_t)d->B * d->T);
}

struct tensor decoder_lse(const struct decoder *d, void *data) {
  return (struct tensor){data, DTYPE_F32, 3, {(size_t)d->B, (size_t)d->config.n_head, (size_t)d->T}};
}

struct tensor decoder_tokens(const struct decoder *d, int *data) {
  return tensor_2d(data, DTYPE_I32, (size_t)d->B, (size_t)d->T);
}

void decoder_load_batch(struct decoder *d, const int *inputs, const int *targets) {
  size_t bytes = (size_t)d->B * d->T * sizeof(int);
  device_copy_to_device(d->fsdp->streams.compute, d->inputs, inputs, bytes);
  device_copy_to_device(d->fsdp->streams.compute, d->targets, targets, bytes);
}

/* ---- the blocks ---- */

struct block_buffers {
  void **buffer[DECODER_MAX_BUFFERS];
  size_t bytes[DECODER_MAX_BUFFERS];
};

static struct block_buffers buffers_of(struct decoder *d, const struct decoder_block *block, int layer) {
  FSDP_CHECK(block->n_buffers >= 1 && block->n_buffers <= DECODER_MAX_BUFFERS);
  struct block_buffers b;
  block->buffers(d, layer, b.buffer, b.bytes);
  return b;
}

/* Each buffer not held yet: a recompute finds the output still there. */
static void block_alloc(struct decoder *d, const struct decoder_block *block, int layer) {
  struct block_buffers b = buffers_of(d, block, layer);
  for (int i = 0; i < block->n_buffers; i++)
    if (!*b.buffer[i]) *b.buffer[i] = decoder_alloc_bytes(d, b.bytes[i]);
}

/* Everything but the output, which is the next block's input. */
static void block_release_inner(struct decoder *d, const struct decoder_block *block, int layer) {
  struct block_buffers b = buffers_of(d, block, layer);
  decoder_release_all(d, b.buffer, (size_t)block->n_buffers - 1);
}

static void **block_output(struct decoder *d, const struct decoder_block *block, int layer) {
  return buffers_of(d, block, layer).buffer[block->n_buffers - 1];
}

void *decoder_blocks_forward(struct decoder *d, const struct decoder_block *block) {
  void *residual = d->encoded;
  for (int l = 0; l < d->config.n_layer; l++) {
    fsdp_pre_forward(d->fsdp, d->blocks[l]);
    block_alloc(d, block, l);
    block->forward(d, l, residual);
    /* A checkpointed block keeps only its output, the next block's input: its
     * backward recomputes the rest from its own input. */
    if (decoder_is_checkpointed(d, l)) block_release_inner(d, block, l);
    fsdp_post_forward(d->fsdp, d->blocks[l]);
    residual = *block_output(d, block, l);
  }
  return residual;
}

void decoder_blocks_backward(struct decoder *d, const struct decoder_block *block) {
  for (int l = d->config.n_layer - 1; l >= 0; l--) {
    void *input = l == 0 ? d->encoded : *block_output(d, block, l - 1);
    fsdp_pre_backward(d->fsdp, d->blocks[l]);
    if (decoder_is_checkpointed(d, l)) {
      block_alloc(d, block, l);
      block->forward(d, l, input);
    }
    block->backward(d, l, input);
    block_release_inner(d, block, l);
    decoder_release(d, block_output(d, block, l));
    fsdp_post_backward(d->fsdp, d->blocks[l]);
  }
}

void decoder_release_activations(struct decoder *d, const struct decoder_block *block) {
  void **const shared[] = {&d->encoded, &d->logits, &d->losses, &d->d_residual};
  decoder_release_all(d, shared, sizeof shared / sizeof shared[0]);
  for (int l = 0; l < d->config.n_layer; l++) {
    block_release_inner(d, block, l);
    decoder_release(d, block_output(d, block, l));
  }
}
