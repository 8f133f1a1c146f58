/* GPT-2 as transformers' GPT2LMHeadModel names and lays it out: its Conv1D weights are
 * stored [in, out], the transpose of the runtime's (out, in); the head is tied to wte,
 * so transformers saves no lm_head.weight. */
#include <cJSON.h>

#include "fsdp/gpt2.h"
#include "fsdp/hf.h"
#include "hf_config.h"

static const struct hf_tensor_rule BEFORE[] = {
    {"transformer.wte.weight", "wte", 0, HF_ALWAYS},
    {"transformer.wpe.weight", "wpe", 0, HF_ALWAYS},
};
static const struct hf_tensor_rule LAYER[] = {
    {"transformer.h.%d.ln_1.weight", "h.%d.ln1.weight", 0, HF_ALWAYS},
    {"transformer.h.%d.ln_1.bias", "h.%d.ln1.bias", 0, HF_ALWAYS},
    {"transformer.h.%d.attn.c_attn.weight", "h.%d.attn.qkv.weight", 1, HF_ALWAYS},
    {"transformer.h.%d.attn.c_attn.bias", "h.%d.attn.qkv.bias", 0, HF_ALWAYS},
    {"transformer.h.%d.attn.c_proj.weight", "h.%d.attn.proj.weight", 1, HF_ALWAYS},
    {"transformer.h.%d.attn.c_proj.bias", "h.%d.attn.proj.bias", 0, HF_ALWAYS},
    {"transformer.h.%d.ln_2.weight", "h.%d.ln2.weight", 0, HF_ALWAYS},
    {"transformer.h.%d.ln_2.bias", "h.%d.ln2.bias", 0, HF_ALWAYS},
    {"transformer.h.%d.mlp.c_fc.weight", "h.%d.mlp.fc.weight", 1, HF_ALWAYS},
    {"transformer.h.%d.mlp.c_fc.bias", "h.%d.mlp.fc.bias", 0, HF_ALWAYS},
    {"transformer.h.%d.mlp.c_proj.weight", "h.%d.mlp.proj.weight", 1, HF_ALWAYS},
    {"transformer.h.%d.mlp.c_proj.bias", "h.%d.mlp.proj.bias", 0, HF_ALWAYS},
};
static const struct hf_tensor_rule AFTER[] = {
    {"transformer.ln_f.weight", "lnf.weight", 0, HF_ALWAYS},
    {"transformer.ln_f.bias", "lnf.bias", 0, HF_ALWAYS},
};

/* What the kernels compute: GELU's tanh approximation, LayerNorm's eps 1e-5, attention
 * scaled by 1/sqrt(head dim), a 4C MLP, the head tied; any other setting is refused. */
static void config_read(const char *path, const cJSON *root, struct model_config *c) {
  static const char *const GELU[] = {"gelu_new", "gelu_pytorch_tanh", NULL};
  *c = (struct model_config){0};
  c->n_layer = hf_config_int(path, root, "n_layer", 0);
  c->n_head = hf_config_int(path, root, "n_head", 0);
  c->n_kv_head = c->n_head;
  c->n_embd = hf_config_int(path, root, "n_embd", 0);
  c->vocab_size = hf_config_int(path, root, "vocab_size", 0);
  c->max_seq_len = hf_config_int(path, root, "n_positions", 0);
  c->tied = 1;
  hf_config_expect_string(path, root, "activation_function", GELU);
  hf_config_expect_number(path, root, "layer_norm_epsilon", 1e-5);
  hf_config_expect_number(path, root, "n_inner", 4.0 * c->n_embd);
  if (!hf_config_bool(path, root, "tie_word_embeddings", 1))
    fsdp_fatal("%s: \"tie_word_embeddings\" must be true: GPT-2's head is its token embedding", path);
  if (!hf_config_bool(path, root, "scale_attn_weights", 1) ||
      hf_config_bool(path, root, "scale_attn_by_inverse_layer_idx", 0))
    fsdp_fatal("%s: attention must be scaled by 1/sqrt(head dim) alone (\"scale_attn_weights\" true, "
               "\"scale_attn_by_inverse_layer_idx\" false)",
               path);
}

static void config_write(const struct model_config *c, enum dtype dtype, cJSON *root) {
  cJSON_AddStringToObject(root, "activation_function", "gelu_new");
  cJSON_AddNumberToObject(root, "n_layer", c->n_layer);
  cJSON_AddNumberToObject(root, "n_head", c->n_head);
  cJSON_AddNumberToObject(root, "n_embd", c->n_embd);
  cJSON_AddNullToObject(root, "n_inner");
  cJSON_AddNumberToObject(root, "n_positions", c->max_seq_len);
  cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
  hf_config_add_float(root, "layer_norm_epsilon", 1e-5f);
  /* Dropout is training-time noise the runtime does not add. */
  hf_config_add_float(root, "attn_pdrop", 0.0f);
  hf_config_add_float(root, "embd_pdrop", 0.0f);
  hf_config_add_float(root, "resid_pdrop", 0.0f);
  cJSON_AddBoolToObject(root, "scale_attn_weights", 1);
  cJSON_AddBoolToObject(root, "scale_attn_by_inverse_layer_idx", 0);
  cJSON_AddBoolToObject(root, "reorder_and_upcast_attn", 0);
  cJSON_AddBoolToObject(root, "tie_word_embeddings", 1);
  cJSON_AddStringToObject(root, "torch_dtype", hf_config_torch_dtype(dtype));
}

#define COUNT(a) (int)(sizeof a / sizeof a[0])
const struct hf_format GPT2_HF_FORMAT = {"gpt2",        "GPT2LMHeadModel", "transformer.", BEFORE,      LAYER,
                                         AFTER,         COUNT(BEFORE),     COUNT(LAYER),   COUNT(AFTER), config_read,
                                         config_write};
