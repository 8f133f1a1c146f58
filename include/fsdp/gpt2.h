/* GPT-2 on the FSDP runtime, a decoder (fsdp/decoder.h): the embedding module holds the
 * token and position embeddings, the output projection is tied to the token embedding. */
#ifndef FSDP_GPT2_H
#define FSDP_GPT2_H

#include <stddef.h>

#include "fsdp/decoder.h"

/* GPT-2 reads n_layer, n_head, n_embd, vocab_size and max_seq_len of a model_config;
 * its head is always tied to the token embedding. */
extern const struct model_family GPT2_FAMILY;

/* Parameter order within a block module (the flat layout follows it). */
enum gpt2_block_param {
  BLK_LN1_W, BLK_LN1_B, BLK_QKV_W, BLK_QKV_B, BLK_ATTPROJ_W, BLK_ATTPROJ_B,
  BLK_LN2_W, BLK_LN2_B, BLK_FC_W, BLK_FC_B, BLK_FCPROJ_W, BLK_FCPROJ_B, BLK_NUM_PARAMS
};
enum gpt2_embedding_param { EMB_WTE, EMB_WPE, EMB_NUM_PARAMS };
enum gpt2_final_norm_param { LNF_W, LNF_B, LNF_NUM_PARAMS };

/* Saved activations of one block for the backward, in the compute dtype. */
struct gpt2_block_acts {
  void *ln1, *ln1_mean, *ln1_rstd; /* (N, C), (N), (N) */
  void *qkv;                       /* (N, 3C) */
  void *atty;                      /* (N, C) */
  void *lse;                       /* (B, NH, T) fp32: attention's log-sum-exp */
  void *attproj;                   /* (N, C) */
  void *residual2;                 /* (N, C) */
  void *ln2, *ln2_mean, *ln2_rstd;
  void *fch, *fch_gelu;            /* (N, 4C) */
  void *fcproj;                    /* (N, C) */
  void *residual3;                 /* (N, C): the block's output */
};

/* The decoder's shared state, then GPT-2's own activations (fsdp/decoder.h). */
struct gpt2 {
  struct decoder base;    /* first: the decoder's functions take the model as one */
  struct gpt2_block_acts *acts;
  void *lnf, *lnf_mean, *lnf_rstd;
  /* Gradients of activations, reused by every block in the backward. */
  void *d_ln, *d_qkv, *d_atty, *d_fch, *d_fch_gelu; /* (N, C|3C|C|4C|4C) */
};

/* NULL when batches of B x T fit the kernels' int sizes, else a message saying what is too large. */
const char *gpt2_batch_problem(const struct model_config *c, int B, int T);

/* Declares the units on fsdp (which must have none yet), for batches of B x T.
 * ac_every = K > 0 checkpoints blocks K-1, 2K-1, ... (1: all of them, 0: none). */
void gpt2_create(struct gpt2 *model, const struct model_config *config, struct fsdp_model *fsdp, int B, int T,
                 int ac_every);
void gpt2_free(struct gpt2 *model);

/* Forward over one batch (host token ids, copied to the device); adds its losses to
 * base.loss_sum (decoder_take_loss reads their mean).
 * Drives each unit's pre/post-forward hooks. */
void gpt2_forward(struct gpt2 *model, const int *inputs, const int *targets);
/* Backward of the last forward, for the loss loss_scale times its mean loss (1/K for one of
 * K accumulated micro-batches, times the fp16 loss scale); hands each unit's
 * gradients to the runtime, which reduces them into its grad_shard. */
void gpt2_backward(struct gpt2 *model, float loss_scale);
/* A decode step with a KV cache (fsdp/model.h's decode); uses none of the training
 * activations, so a model made for any B x T decodes. */
void gpt2_decode(struct gpt2 *model, struct kv_cache *cache, const int *tokens, int n, float *logits);
/* Frees the activations of a forward that no backward will use (an evaluation). */
void gpt2_release_activations(struct gpt2 *model);
#endif
