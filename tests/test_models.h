/* The small models the model tests build by name: awkward on purpose, nothing a power
 * of two (3 heads of 24, 6 heads of 8, a vocab of 67, an FFN of 80), with sequences of
 * at most TEST_MODEL_SEQ tokens. */
#ifndef FSDP_TESTS_TEST_MODELS_H
#define FSDP_TESTS_TEST_MODELS_H

#include <stddef.h>
#include <string.h>

#include "fsdp/gpt2.h"
#include "fsdp/llama.h"

enum { TEST_MODEL_SEQ = 24 };

struct test_model {
  const char *name;
  const struct model_family *family;
  struct model_config config;
};

#define TEST_LLAMA(kv_heads, theta, factor, original, tie)                                                      \
  {.n_layer = 2, .n_head = 6, .n_kv_head = kv_heads, .n_embd = 48, .vocab_size = 67,                          \
   .max_seq_len = TEST_MODEL_SEQ, .ffn_hidden = 80, .norm_eps = 1e-5f, .rope_theta = theta,                   \
   .rope_factor = factor, .rope_low_freq_factor = 1.0f, .rope_high_freq_factor = 4.0f,                         \
   .rope_original_max_seq_len = original, .tied = tie}

/* Each program includes this once. */
static const struct test_model TEST_MODELS[] = {
    {"gpt2", &GPT2_FAMILY,
     {.n_layer = 2, .n_head = 3, .n_kv_head = 3, .n_embd = 72, .vocab_size = 67, .max_seq_len = TEST_MODEL_SEQ,
      .tied = 1}},
    /* Grouped-query attention (3 query heads a kv head) with Llama 3.1's scaling. */
    {"llama-gqa", &LLAMA3_FAMILY, TEST_LLAMA(2, 500000.0f, 8.0f, 8192, 0)},
    /* Multi-head attention, plain RoPE. */
    {"llama-mha", &LLAMA3_FAMILY, TEST_LLAMA(6, 10000.0f, 0.0f, 0, 0)},
    /* The head tied to the embedding; the scaling over an original 64 positions so that
     * it reaches the frequencies these 24 positions turn visibly (f_1 = 0.1 smoothed, f_2
     * and f_3 divided by 4). */
    {"llama-tied", &LLAMA3_FAMILY, TEST_LLAMA(3, 10000.0f, 4.0f, 64, 1)},
};

/* The model named, or NULL. */
static inline const struct test_model *test_model_find(const char *name) {
  for (size_t i = 0; i < sizeof TEST_MODELS / sizeof TEST_MODELS[0]; i++)
    if (strcmp(TEST_MODELS[i].name, name) == 0) return &TEST_MODELS[i];
  return NULL;
}

#endif
