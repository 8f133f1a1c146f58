/* The small models the model tests build by name: awkward on purpose, nothing a power
 * of two (3 heads of 24, a vocab of 67), with sequences of at most TEST_MODEL_SEQ tokens. */
#ifndef FSDP_TESTS_TEST_MODELS_H
#define FSDP_TESTS_TEST_MODELS_H

#include <stddef.h>
#include <string.h>

#include "fsdp/gpt2.h"

enum { TEST_MODEL_SEQ = 24 };

struct test_model {
  const char *name;
  const struct model_family *family;
  struct model_config config;
};

/* Each program includes this once. */
static const struct test_model TEST_MODELS[] = {
    {"gpt2", &GPT2_FAMILY,
     {.n_layer = 2, .n_head = 3, .n_kv_head = 3, .n_embd = 72, .vocab_size = 67, .max_seq_len = TEST_MODEL_SEQ,
      .tied = 1}},
};

/* The model named, or NULL. */
static inline const struct test_model *test_model_find(const char *name) {
  for (size_t i = 0; i < sizeof TEST_MODELS / sizeof TEST_MODELS[0]; i++)
    if (strcmp(TEST_MODELS[i].name, name) == 0) return &TEST_MODELS[i];
  return NULL;
}

#endif
