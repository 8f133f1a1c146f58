/* What GPT-2 and Llama 3 share (src/models/decoder.c): a decoder-only language model on
 * the FSDP runtime, declared as modules in forward order: the embedding, each block, the
 * final norm and the output projection (tied to the embedding, or of its own). The wrap
 * policy decides which of them share a unit (fsdp_model_wrap).
 *
 * Activations live on the fsdp model's device, in the compute dtype (nn_compute_dtype),
 * from the forward that makes them to the backward that uses them (NULL otherwise); a
 * checkpointed block holds only its output between the two. A family's struct starts
 * with a struct decoder, and its functions go through these. */
#ifndef FSDP_DECODER_H
#define FSDP_DECODER_H

#include <stddef.h>
#include <stdlib.h>

#include "fsdp/error.h"
#include "fsdp/model.h"
#include "fsdp/nn.h"
#include "fsdp/runtime.h"

struct decoder {
  struct model_config config;
  int B, T;
  int ac_every;           /* activation checkpointing of every ac_every-th block; 0: none */
  struct fsdp_model *fsdp;
  int embedding, final_norm, output; /* modules */
  int *blocks;                       /* n_layer modules */
  enum dtype dtype;       /* of the activations */

  int *inputs, *targets;  /* (B, T) int32 on the device, the last batch */
  void *encoded;          /* (N, C): the embeddings, the first block's input */
  /* The logits' rows are vocab_padded wide, the vocabulary rounded up to
   * DECODER_VOCAB_ALIGN, so that the head's products run on aligned rows (a GPU's fast
   * GEMMs need rows of a multiple of 8 elements); the columns past the vocabulary are
   * outside the softmax, have no gradient, and are never seen outside the loss. */
  int vocab_padded;
  int loss_chunk;         /* tokens per chunk of the loss; 0: decoder_loss_chunk's default */
  void *logits;           /* (loss chunk, vocab_padded) during the loss; (N, vocab_padded) kept with keep_logits */
  int keep_logits;        /* 1: the forward's logits of all N tokens stay until the backward or the next forward */
  void *losses;           /* (N) fp32 */
  double *loss_sum;       /* on the device: the sum of the losses of the forwards since the last take */
  int loss_forwards;      /* those forwards */
  /* The gradient of the residual stream at the current depth, (N, C), from the final
   * norm's backward to the embeddings'. */
  void *d_residual;
};

enum { DECODER_VOCAB_ALIGN = 128 };

/* A family's block: its saved activations (at most DECODER_MAX_BUFFERS of them, the
 * output last, each of the given bytes: decoder_bytes or decoder_stats_bytes), its forward
 * from input, and its backward, which takes dL/d(output) in d_residual and leaves
 * dL/d(input) there. */
enum { DECODER_MAX_BUFFERS = 16 };
struct decoder_block {
  int n_buffers;
  void (*buffers)(struct decoder *d, int layer, void **buffers[], size_t bytes[]);
  void (*forward)(struct decoder *d, int layer, void *input);
  void (*backward)(struct decoder *d, int layer, void *input);
};

/* NULL when the shape every decoder has is consistent, else a message naming the first
 * inconsistent field as its flag (model_family.config_problem). */
const char *decoder_config_problem(const struct model_config *c);
/* NULL when activations of B x T rows of widest columns (the widest a family's kernels
 * take as one int count) fit, else a message naming the flag that sets that width (value). */
const char *decoder_batch_problem(int B, int T, const char *flag, int value, size_t widest);

/* Sets the fields a family shares for batches of B x T on fsdp (its units are declared
 * after) and allocates the token and loss buffers; d is zeroed first by the family. */
void decoder_init(struct decoder *d, const struct model_config *config, struct fsdp_model *fsdp, int B, int T,
                  int ac_every);
/* Frees what decoder_init allocated; the activations are released before. */
void decoder_free(struct decoder *d);
int decoder_is_checkpointed(const struct decoder *d, int layer);

/* Block l's module, named "block l", its parameters prefixed with block_prefix and l
 * ("layers." gives "layers.3.attention.wq.weight"). */
void decoder_add_block(struct decoder *d, int l, const char *block_prefix, const struct param_spec *specs,
                       int n_params);
/* A module's parameter and its gradient (fsdp_param, fsdp_grad). */
struct tensor decoder_param(const struct decoder *d, int module, int param);
struct tensor decoder_grad(const struct decoder *d, int module, int param);

/* The compute stream, buffers on it, and the activations' views. Activations are in the
 * compute dtype; the norms' statistics and the per-token losses in fp32 (the ops'
 * contracts keep them at fp32's precision whatever the compute dtype). */
struct nn_ctx decoder_ctx(const struct decoder *d);
size_t decoder_bytes(const struct decoder *d, size_t elements);
size_t decoder_stats_bytes(size_t elements);
void *decoder_alloc_bytes(const struct decoder *d, size_t bytes);
void *decoder_alloc(const struct decoder *d, size_t elements);
void *decoder_alloc_stats(const struct decoder *d, size_t elements);
void decoder_release(const struct decoder *d, void **buffer);
/* Releases each of buffers[0 .. n). */
void decoder_release_all(const struct decoder *d, void **const buffers[], size_t n);
void decoder_zero(const struct decoder *d, void *buffer, size_t elements);
/* (N, cols) in the compute dtype; (N) statistics in fp32; attention's log-sum-exp
 * (B, n_head, T) in fp32; the tokens (B, T) in int32. */
struct tensor decoder_act2(const struct decoder *d, void *data, size_t cols);
struct tensor decoder_stats(const struct decoder *d, void *data);
struct tensor decoder_lse(const struct decoder *d, void *data);
struct tensor decoder_tokens(const struct decoder *d, int *data);

/* Copies a batch (host token ids) to the device. */
void decoder_load_batch(struct decoder *d, const int *inputs, const int *targets);
/* Every block's forward from encoded, each between its unit's hooks; returns the last
 * block's output. A checkpointed block keeps only its output. */
void *decoder_blocks_forward(struct decoder *d, const struct decoder_block *block);
/* The loss, a chunk of tokens at a time (decoder_loss.c): logits = final @ head^T, then
 * the per-token losses; the logits go unless keep_logits. */
void decoder_loss_forward(struct decoder *d, struct tensor head, void *final);
/* The tokens of a chunk of the loss: loss_chunk, or as many as keep a chunk's logits within
 * 2^26 elements; at most N. */
size_t decoder_loss_chunk(const struct decoder *d);
/* loss_sum += the sum of losses: the forward's end, after the output's post-forward. */
void decoder_add_loss(struct decoder *d);
/* This rank's mean loss over the tokens of the forwards since the last take (0 on the meta
 * device), read to the host: it waits for them. */
double decoder_take_loss(struct decoder *d);
/* The backward of the loss, loss_scale times the mean over the N tokens, through the
 * head (accumulating into dhead), a chunk at a time from the chunk's logits computed
 * again; returns dL/d(final), (N, C), for the family to release. */
void *decoder_loss_backward(struct decoder *d, float loss_scale, struct tensor head, struct tensor dhead, void *final);
/* Every block's backward, last to first, between its unit's hooks, a checkpointed one
 * recomputed first; each block's activations go after its backward. */
void decoder_blocks_backward(struct decoder *d, const struct decoder_block *block);
/* Releases the shared activations and every block's. */
void decoder_release_activations(struct decoder *d, const struct decoder_block *block);

/* ---- generation with a KV cache (src/models/decoder_cache.c) ----
 * A decode step runs n new tokens at positions len .. len + n - 1 through each block
 * between the same hooks as the forward, appends their keys and values to the cache,
 * attends over every cached position and returns the logits of the last one only. */
struct kv_cache {
  int max_len, len;  /* positions it has room for, and holds */
  void **k, **v;     /* per layer (max_len, n_kv_head, hd), in the compute dtype on the device */
};

/* An empty cache of max_len <= max_seq_len positions, on the model's device. */
struct kv_cache *decoder_cache_create(const struct decoder *d, int max_len);
void decoder_cache_free(const struct decoder *d, struct kv_cache *cache);
/* The rows of the n new positions of a layer's k or v buffer, (n, n_kv_head * hd), for
 * the projections to write into; and all cached rows with them, (len + n, n_kv_head, hd). */
struct tensor decoder_cache_new(const struct decoder *d, const struct kv_cache *cache, void *buffer, int n);
struct tensor decoder_cache_all(const struct decoder *d, const struct kv_cache *cache, void *buffer, int n);
/* Host token ids tokens[0 .. n) on the device, as (1, n) int32; decoder_release frees them. */
struct tensor decoder_upload_tokens(const struct decoder *d, const int *tokens, int n);
/* Rows of an activation of n rows: (n, cols). */
struct tensor decoder_rows(const struct decoder *d, void *data, int n, size_t cols);
/* Rows [first, first + n) of a matrix (rows, cols), or elements of a vector. */
struct tensor decoder_param_rows(struct tensor t, size_t first, size_t n);
/* logits (host, vocab_size floats) = final (1, C) @ head^T. */
void decoder_logits_to_host(const struct decoder *d, struct tensor head, void *final, float *logits);
/* The step's end: the cache holds n more positions and every unit is resharded. */
void decoder_decode_done(struct decoder *d, struct kv_cache *cache, int n);

/* Defines `const struct model_family NAME` (fsdp/model.h) for the family whose struct is
 * `struct PREFIX`, starting with its decoder, from its PREFIX_create, PREFIX_free,
 * PREFIX_forward, PREFIX_backward, PREFIX_release_activations and PREFIX_decode (gpt2.h's, llama.h's)
 * behind model_family's void * signatures, with its Hugging Face format (fsdp/hf.h). */
#define DECODER_FAMILY(NAME, family_name, PREFIX, config_problem_fn, batch_problem_fn, hf_format)                          \
  static void *PREFIX##_family_create(const struct model_config *c, struct fsdp_model *fsdp, int B, int T,        \
                                      int ac_every) {                                                            \
    struct PREFIX *model = fsdp_xmalloc(sizeof *model);                                                          \
    PREFIX##_create(model, c, fsdp, B, T, ac_every);                                                             \
    return model;                                                                                                \
  }                                                                                                              \
  static void PREFIX##_family_free(void *model) {                                                                \
    PREFIX##_free(model);                                                                                        \
    free(model);                                                                                                 \
  }                                                                                                              \
  static void PREFIX##_family_forward(void *model, const int *inputs, const int *targets) {                      \
    PREFIX##_forward(model, inputs, targets);                                                                    \
  }                                                                                                              \
  static double PREFIX##_family_take_loss(void *model) { return decoder_take_loss(model); }                      \
  static void PREFIX##_family_backward(void *model, float loss_scale) { PREFIX##_backward(model, loss_scale); }   \
  static void PREFIX##_family_release(void *model) { PREFIX##_release_activations(model); }                      \
  static struct kv_cache *PREFIX##_family_cache_create(void *model, int max_len) {                               \
    return decoder_cache_create(model, max_len);                                                                 \
  }                                                                                                              \
  static void PREFIX##_family_cache_free(void *model, struct kv_cache *cache) {                                  \
    decoder_cache_free(model, cache);                                                                            \
  }                                                                                                              \
  static void PREFIX##_family_decode(void *model, struct kv_cache *cache, const int *tokens, int n,               \
                                     float *logits) {                                                            \
    PREFIX##_decode(model, cache, tokens, n, logits);                                                            \
  }                                                                                                              \
  const struct model_family NAME = {family_name,           config_problem_fn,       batch_problem_fn,            \
                                    PREFIX##_family_create, PREFIX##_family_free,   PREFIX##_family_forward,     \
                                    PREFIX##_family_take_loss, PREFIX##_family_backward,                         \
                                    PREFIX##_family_release, hf_format,                                          \
                                    PREFIX##_family_cache_create, PREFIX##_family_cache_free,                    \
                                    PREFIX##_family_decode}

#endif
