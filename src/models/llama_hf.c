/* Llama 3 as transformers' LlamaForCausalLM names it. The runtime's q and k are in
 * transformers' rotate-half RoPE layout already (llama.h), so no weight is permuted,
 * and every matrix is (out, in) in both. A tied model has no lm_head.weight. */
#include <cJSON.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/hf.h"
#include "fsdp/llama.h"
#include "hf_config.h"

static const struct hf_tensor_rule BEFORE[] = {
    {"model.embed_tokens.weight", "tok_embeddings.weight", 0, HF_ALWAYS},
};
static const struct hf_tensor_rule LAYER[] = {
    {"model.layers.%d.input_layernorm.weight", "layers.%d.attention_norm.weight", 0, HF_ALWAYS},
    {"model.layers.%d.self_attn.q_proj.weight", "layers.%d.attention.wq.weight", 0, HF_ALWAYS},
    {"model.layers.%d.self_attn.k_proj.weight", "layers.%d.attention.wk.weight", 0, HF_ALWAYS},
    {"model.layers.%d.self_attn.v_proj.weight", "layers.%d.attention.wv.weight", 0, HF_ALWAYS},
    {"model.layers.%d.self_attn.o_proj.weight", "layers.%d.attention.wo.weight", 0, HF_ALWAYS},
    {"model.layers.%d.post_attention_layernorm.weight", "layers.%d.ffn_norm.weight", 0, HF_ALWAYS},
    {"model.layers.%d.mlp.gate_proj.weight", "layers.%d.feed_forward.w1.weight", 0, HF_ALWAYS},
    {"model.layers.%d.mlp.up_proj.weight", "layers.%d.feed_forward.w3.weight", 0, HF_ALWAYS},
    {"model.layers.%d.mlp.down_proj.weight", "layers.%d.feed_forward.w2.weight", 0, HF_ALWAYS},
};
static const struct hf_tensor_rule AFTER[] = {
    {"model.norm.weight", "norm.weight", 0, HF_ALWAYS},
    {"lm_head.weight", "output.weight", 0, HF_UNTIED},
};

/* RoPE: plain, or Llama 3.1's frequency scaling ("rope_type" "llama3"); the others
 * transformers has are refused. */
static void read_rope_scaling(const char *path, const cJSON *root, struct model_config *c) {
  const cJSON *s = hf_config_get(root, "rope_scaling");
  if (!s) return;
  if (!cJSON_IsObject(s)) fsdp_fatal("%s: \"rope_scaling\" is not an object", path);
  const cJSON *type = hf_config_get(s, "rope_type");
  if (!type) type = hf_config_get(s, "type");
  if (!cJSON_IsString(type) || strcmp(type->valuestring, "llama3") != 0)
    fsdp_fatal("%s: \"rope_scaling\": only \"rope_type\" \"llama3\" (Llama 3.1's) is supported", path);
  c->rope_factor = hf_config_float(path, s, "factor", 0.0f);
  c->rope_low_freq_factor = hf_config_float(path, s, "low_freq_factor", 0.0f);
  c->rope_high_freq_factor = hf_config_float(path, s, "high_freq_factor", 0.0f);
  c->rope_original_max_seq_len = hf_config_int(path, s, "original_max_position_embeddings", 0);
}

/* transformers' LlamaConfig defaults stand where a key is absent. */
static void config_read(const char *path, const cJSON *root, struct model_config *c) {
  static const char *const SILU[] = {"silu", NULL};
  *c = (struct model_config){0};
  c->n_layer = hf_config_int(path, root, "num_hidden_layers", 0);
  c->n_head = hf_config_int(path, root, "num_attention_heads", 0);
  c->n_kv_head = hf_config_int(path, root, "num_key_value_heads", c->n_head);
  c->n_embd = hf_config_int(path, root, "hidden_size", 0);
  c->ffn_hidden = hf_config_int(path, root, "intermediate_size", 0);
  c->vocab_size = hf_config_int(path, root, "vocab_size", 0);
  c->max_seq_len = hf_config_int(path, root, "max_position_embeddings", 0);
  c->norm_eps = hf_config_float(path, root, "rms_norm_eps", 1e-6f);
  c->rope_theta = hf_config_float(path, root, "rope_theta", 10000.0f);
  c->tied = hf_config_bool(path, root, "tie_word_embeddings", 0);
  read_rope_scaling(path, root, c);
  hf_config_expect_string(path, root, "hidden_act", SILU);
  if (hf_config_bool(path, root, "attention_bias", 0) || hf_config_bool(path, root, "mlp_bias", 0))
    fsdp_fatal("%s: \"attention_bias\" and \"mlp_bias\" must be false: Llama 3 has no biases", path);
  if (c->n_embd % c->n_head == 0) hf_config_expect_number(path, root, "head_dim", c->n_embd / c->n_head);
}

static void config_write(const struct model_config *c, enum dtype dtype, cJSON *root) {
  cJSON_AddNumberToObject(root, "num_hidden_layers", c->n_layer);
  cJSON_AddNumberToObject(root, "num_attention_heads", c->n_head);
  cJSON_AddNumberToObject(root, "num_key_value_heads", c->n_kv_head);
  cJSON_AddNumberToObject(root, "hidden_size", c->n_embd);
  cJSON_AddNumberToObject(root, "intermediate_size", c->ffn_hidden);
  cJSON_AddNumberToObject(root, "vocab_size", c->vocab_size);
  cJSON_AddNumberToObject(root, "max_position_embeddings", c->max_seq_len);
  hf_config_add_float(root, "rms_norm_eps", c->norm_eps);
  hf_config_add_float(root, "rope_theta", c->rope_theta);
  if (c->rope_factor > 0.0f) {
    cJSON *s = cJSON_AddObjectToObject(root, "rope_scaling");
    cJSON_AddStringToObject(s, "rope_type", "llama3");
    hf_config_add_float(s, "factor", c->rope_factor);
    hf_config_add_float(s, "low_freq_factor", c->rope_low_freq_factor);
    hf_config_add_float(s, "high_freq_factor", c->rope_high_freq_factor);
    cJSON_AddNumberToObject(s, "original_max_position_embeddings", c->rope_original_max_seq_len);
  } else {
    cJSON_AddNullToObject(root, "rope_scaling");
  }
  cJSON_AddStringToObject(root, "hidden_act", "silu");
  cJSON_AddBoolToObject(root, "attention_bias", 0);
  cJSON_AddBoolToObject(root, "mlp_bias", 0);
  hf_config_add_float(root, "attention_dropout", 0.0f);
  cJSON_AddBoolToObject(root, "tie_word_embeddings", c->tied);
  cJSON_AddStringToObject(root, "torch_dtype", hf_config_torch_dtype(dtype));
}

#define COUNT(a) (int)(sizeof a / sizeof a[0])
const struct hf_format LLAMA3_HF_FORMAT = {"llama",       "LlamaForCausalLM", "model.",     BEFORE,      LAYER,
                                           AFTER,         COUNT(BEFORE),      COUNT(LAYER), COUNT(AFTER), config_read,
                                           config_write};
