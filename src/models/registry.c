/* The models the command line can build: one line per preset, naming its family. */
#include <stddef.h>
#include <string.h>

#include "fsdp/gpt2.h"
#include "fsdp/model.h"

/* GPT-2: the first two read bytes as tokens; then the 124M/350M/774M/1.5B shapes. */
#define GPT2(name, layers, heads, embd, vocab, seq)                                                          \
  {name, &GPT2_FAMILY,                                                                                       \
   {.n_layer = layers, .n_head = heads, .n_kv_head = heads, .n_embd = embd, .vocab_size = vocab,             \
    .max_seq_len = seq, .tied = 1}}

static const struct model_preset PRESETS[] = {
    GPT2("gpt2-tiny", 2, 4, 128, 256, 256),
    GPT2("shakespeare-char", 6, 6, 384, 256, 256),
    GPT2("gpt2", 12, 12, 768, 50257, 1024),
    GPT2("gpt2-medium", 24, 16, 1024, 50257, 1024),
    GPT2("gpt2-large", 36, 20, 1280, 50257, 1024),
    GPT2("gpt2-xl", 48, 25, 1600, 50257, 1024),
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
