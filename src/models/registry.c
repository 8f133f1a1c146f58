/* The models the command line can build: one line per preset, naming its family. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "fsdp/gpt2.h"
#include "fsdp/hf.h"
#include "fsdp/llama.h"
#include "fsdp/model.h"

/* GPT-2: the first two read bytes as tokens; then the 124M/350M/774M/1.5B shapes. */
#define GPT2(name, layers, heads, embd, vocab, seq)                                                          \
  {name, &GPT2_FAMILY,                                                                                       \
   {.n_layer = layers, .n_head = heads, .n_kv_head = heads, .n_embd = embd, .vocab_size = vocab,             \
    .max_seq_len = seq, .tied = 1}}

/* Llama 3: theta 500000, eps 1e-5 and Llama 3.1's RoPE scaling (low and high frequency
 * factors 1 and 4 around an original 8192 positions) with the preset's factor. */
#define LLAMA3(name, layers, heads, kv_heads, embd, ffn, vocab, seq, factor, tie)                            \
  {name, &LLAMA3_FAMILY,                                                                                     \
   {.n_layer = layers, .n_head = heads, .n_kv_head = kv_heads, .n_embd = embd, .vocab_size = vocab,          \
    .max_seq_len = seq, .ffn_hidden = ffn, .norm_eps = 1e-5f, .rope_theta = 500000.0f, .rope_factor = factor, \
    .rope_low_freq_factor = 1.0f, .rope_high_freq_factor = 4.0f, .rope_original_max_seq_len = 8192, .tied = tie}}

static const struct model_preset PRESETS[] = {
    GPT2("gpt2-tiny", 2, 4, 128, 256, 256),
    GPT2("shakespeare-char", 6, 6, 384, 256, 256),
    GPT2("gpt2", 12, 12, 768, 50257, 1024),
    GPT2("gpt2-medium", 24, 16, 1024, 50257, 1024),
    GPT2("gpt2-large", 36, 20, 1280, 50257, 1024),
    GPT2("gpt2-xl", 48, 25, 1600, 50257, 1024),
    /* torchtitan's debug model (its RoPE scaled as its default, factor 8), Llama 3.2 1B
     * (tied), Llama 3.1 8B and 70B (for plans: 70B's training state is a cluster's). */
    LLAMA3("llama3-debug", 6, 16, 16, 256, 768, 2048, 2048, 8.0f, 0),
    LLAMA3("llama3-1b", 16, 32, 8, 2048, 8192, 128256, 8192, 32.0f, 1),
    LLAMA3("llama3-8b", 32, 32, 8, 4096, 14336, 128256, 8192, 8.0f, 0),
    LLAMA3("llama3-70b", 80, 64, 8, 8192, 28672, 128256, 8192, 8.0f, 0),
};
enum { NUM_PRESETS = sizeof PRESETS / sizeof PRESETS[0] };

const struct model_preset *model_preset_find(const char *name) {
  for (int i = 0; i < NUM_PRESETS; i++)
    if (strcmp(PRESETS[i].name, name) == 0) return &PRESETS[i];
  return NULL;
}

const char *model_preset_names(void) {
  static char names[512];
  if (!names[0])
    for (int i = 0; i < NUM_PRESETS; i++) {
      if (i) strcat(names, ", ");
      strcat(names, PRESETS[i].name);
    }
  return names;
}

const struct model_family *model_family_by_name(const char *name) {
  for (int i = 0; i < NUM_PRESETS; i++)
    if (strcmp(PRESETS[i].family->name, name) == 0) return PRESETS[i].family;
  return NULL;
}

const struct model_family *model_family_by_hf_type(const char *model_type) {
  for (int i = 0; i < NUM_PRESETS; i++)
    if (PRESETS[i].family->hf && strcmp(PRESETS[i].family->hf->model_type, model_type) == 0) return PRESETS[i].family;
  return NULL;
}

/* The fields of a model_config, for messages; as the flags that set them where there are some. */
#define INT_FIELD(field) {#field, offsetof(struct model_config, field), 0}
#define FLOAT_FIELD(field) {#field, offsetof(struct model_config, field), 1}
static const struct {
  const char *name;
  size_t offset;
  int is_float;
} FIELDS[] = {
    INT_FIELD(n_layer),      INT_FIELD(n_head),
    INT_FIELD(n_kv_head),    INT_FIELD(n_embd),
    INT_FIELD(vocab_size),   INT_FIELD(max_seq_len),
    INT_FIELD(ffn_hidden),   FLOAT_FIELD(norm_eps),
    FLOAT_FIELD(rope_theta), FLOAT_FIELD(rope_factor),
    FLOAT_FIELD(rope_low_freq_factor), FLOAT_FIELD(rope_high_freq_factor),
    INT_FIELD(rope_original_max_seq_len), INT_FIELD(tied),
};

const char *model_config_difference(const struct model_config *a, const struct model_config *b) {
  static char message[128];
  for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++) {
    const char *x = (const char *)a + FIELDS[i].offset, *y = (const char *)b + FIELDS[i].offset;
    if (FIELDS[i].is_float) {
      float fx, fy;
      memcpy(&fx, x, sizeof fx);
      memcpy(&fy, y, sizeof fy);
      if (fx == fy) continue;
      snprintf(message, sizeof message, "%s %g here, %g there", FIELDS[i].name, fx, fy);
    } else {
      int ix, iy;
      memcpy(&ix, x, sizeof ix);
      memcpy(&iy, y, sizeof iy);
      if (ix == iy) continue;
      snprintf(message, sizeof message, "%s %d here, %d there", FIELDS[i].name, ix, iy);
    }
    return message;
  }
  return NULL;
}
