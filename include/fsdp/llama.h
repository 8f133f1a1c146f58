/* Llama 3 on the FSDP runtime, a decoder (fsdp/decoder.h), with Hugging Face's
 * LlamaForCausalLM's math: RMSNorm, rotary position embeddings (rotate-half, Llama 3.1's
 * frequency scaling where the config has it), grouped-query attention, a SwiGLU MLP, no
 * biases. The embedding, the final RMSNorm and the output projection (tied to the embedding
 * or not) are modules of one parameter each, beside the blocks'. */
#ifndef FSDP_LLAMA_H
#define FSDP_LLAMA_H

#include <stddef.h>

#include "fsdp/decoder.h"

/* Llama reads every field of a model_config (GPT-2's alone leave rope_* and norm_eps). */
extern const struct model_family LLAMA3_FAMILY;

/* Parameter order within a block module, in Hugging Face's shapes (out, in): wq (NH hd, C),
 * wk and wv (NKV hd, C), wo (C, NH hd), w1 = gate and w3 = up (F, C), w2 = down (C, F). */
enum llama_block_param {
  LLAMA_ATTN_NORM, LLAMA_WQ, LLAMA_WK, LLAMA_WV, LLAMA_WO, LLAMA_FFN_NORM, LLAMA_W1, LLAMA_W3, LLAMA_W2,
  LLAMA_BLOCK_PARAMS
};

/* Saved activations of one block for the backward, in the compute dtype; hd = C / NH. */
struct llama_block_acts {
  void *attn_norm, *attn_rstd; /* (N, C), (N) */
  void *q;                     /* (N, NH hd), rotated */
  void *k, *v;                 /* (N, NKV hd), k rotated */
  void *lse;                   /* (B, NH, T) fp32: attention's log-sum-exp */
  void *atty;                  /* (N, NH hd) */
  void *attproj;               /* (N, C) */
  void *h;                     /* (N, C): the input plus the attention */
  void *ffn_norm, *ffn_rstd;   /* (N, C), (N) */
  void *gate, *up, *swiglu;    /* (N, F) */
  void *down;                  /* (N, C) */
  void *out;                   /* (N, C): the block's output */
};

/* The decoder's shared state, then Llama's own. */
struct llama {
  struct decoder base;         /* first: the decoder's functions take the model as one */
  struct llama_block_acts *acts;
  void *rope;                  /* (max_seq_len, hd): nn_rope_table's, from create to free */
  void *norm, *norm_rstd;      /* the final RMSNorm's (N, C), (N) */
  /* Gradients of activations, reused by every block in the backward. d_atty holds
   * dL/d(atty), then the un-rotated gradients of q and of k in turn. */
  void *d_norm, *d_atty, *d_q, *d_k, *d_v; /* (N, C|NH hd|NH hd|NKV hd|NKV hd) */
  void *d_swiglu, *d_gate, *d_up;          /* (N, F) */
};

/* NULL when batches of B x T fit the kernels' int sizes, else a message saying what is too large. */
const char *llama_batch_problem(const struct model_config *c, int B, int T);

/* Declares the units on fsdp (which must have none yet) for batches of B x T and builds
 * the RoPE table. ac_every = K > 0 checkpoints blocks K-1, 2K-1, ... (1: all, 0: none). */
void llama_create(struct llama *model, const struct model_config *config, struct fsdp_model *fsdp, int B, int T,
                  int ac_every);
void llama_free(struct llama *model);

/* Forward over one batch (host token ids, copied to the device); adds its losses to
 * base.loss_sum (decoder_take_loss reads their mean). */
void llama_forward(struct llama *model, const int *inputs, const int *targets);
/* Backward of the last forward, for the loss loss_scale times its mean loss; hands each unit's
 * gradients to the runtime, which reduces them into its grad_shard. */
void llama_backward(struct llama *model, float loss_scale);
/* A decode step with a KV cache (fsdp/model.h's decode); uses none of the training
 * activations, so a model made for any B x T decodes. */
void llama_decode(struct llama *model, struct kv_cache *cache, const int *tokens, int n, float *logits);
/* Frees the activations of a forward that no backward will use (an evaluation). */
void llama_release_activations(struct llama *model);

#endif
