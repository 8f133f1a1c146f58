/* What the command line knows of a model: its configuration and a table of functions
 * (the registry, src/models/registry.c). Adding a model is a file in src/models and a
 * line in the registry; nothing outside src/models names one. */
#ifndef FSDP_MODEL_H
#define FSDP_MODEL_H

#include "fsdp/runtime.h"

/* Every model's shape; each family reads the fields it uses (the rest stay 0). */
struct model_config {
  int n_layer;
  int n_head;
  int n_kv_head;   /* grouped-query attention: heads of k and v (Llama); n_head where there is none */
  int n_embd;
  int vocab_size;
  int max_seq_len; /* GPT-2: rows of the position embedding; Llama: rows of the RoPE table */
  int ffn_hidden;  /* Llama's SwiGLU width; GPT-2's MLP is 4 n_embd */
  float norm_eps;
  float rope_theta;
  /* Llama 3.1's RoPE frequency scaling; rope_factor 0: none. */
  float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
  int rope_original_max_seq_len;
  int tied;        /* the output projection is the token embedding */
};

struct hf_format;
struct kv_cache;

/* A model created on an fsdp model: one of the families' own structs. */
struct model_family {
  const char *name; /* "gpt2", "llama3" */
  /* NULL when valid, else a message naming the first inconsistent field (as a flag). */
  const char *(*config_problem)(const struct model_config *c);
  /* NULL when batches of B x T fit the kernels' int sizes, else what is too large. */
  const char *(*batch_problem)(const struct model_config *c, int B, int T);
  /* Declares the units on fsdp (which has none yet) for batches of B x T; ac_every K > 0
   * checkpoints blocks K-1, 2K-1, ... */
  void *(*create)(const struct model_config *c, struct fsdp_model *fsdp, int B, int T, int ac_every);
  void (*free)(void *model);
  /* Host token ids (B, T): the forward and this rank's loss over its B * T tokens, added to
   * a sum on the device (nothing waits for it). */
  void (*forward)(void *model, const int *inputs, const int *targets);
  /* This rank's mean loss over the tokens of the forwards since the last take, read to the
   * host (it waits for them). */
  double (*take_loss)(void *model);
  /* The backward of the last forward, of loss_scale times the mean loss. */
  void (*backward)(void *model, float loss_scale);
  /* Frees what a forward that no backward follows (an evaluation) left. */
  void (*release_activations)(void *model);
  /* Hugging Face's names, layouts and config.json (fsdp/hf.h). */
  const struct hf_format *hf;
  /* Generation on one rank with a KV cache (fsdp/decoder.h): an empty cache of max_len
   * positions (at most max_seq_len), and its release. */
  struct kv_cache *(*cache_create)(void *model, int max_len);
  void (*cache_free)(void *model, struct kv_cache *cache);
  /* Runs host token ids tokens[0 .. n) at the cache's next n positions, appending their
   * keys and values, and writes the logits of the last one (vocab_size floats, host);
   * every unit is resharded after. */
  void (*decode)(void *model, struct kv_cache *cache, const int *tokens, int n, float *logits);
};

struct model_preset {
  const char *name;
  const struct model_family *family;
  struct model_config config;
};

/* The preset named, or NULL. */
const struct model_preset *model_preset_find(const char *name);
/* The preset names, comma-separated, for messages and --help. */
const char *model_preset_names(void);
/* The family whose Hugging Face config.json has this "model_type", or NULL. */
const struct model_family *model_family_by_hf_type(const char *model_type);
/* The family of that name ("gpt2", "llama3"), or NULL. */
const struct model_family *model_family_by_name(const char *name);
/* NULL when a and b are equal, else the first field that differs, as "n_layer 4 here, 2 there" (a's, b's). */
const char *model_config_difference(const struct model_config *a, const struct model_config *b);

#endif
