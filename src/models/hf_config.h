/* Private to src/models: reading and writing the keys of a Hugging Face config.json,
 * for the families' config_read and config_write (fsdp/hf.h). A reader ends the job
 * with a message naming the file and the key. */
#ifndef FSDP_MODELS_HF_CONFIG_H
#define FSDP_MODELS_HF_CONFIG_H

#include <cJSON.h>

#include "fsdp/dtype.h"

/* The value of key, or NULL when it is absent or null. */
const cJSON *hf_config_get(const cJSON *root, const char *key);
/* A positive integer; absent: fallback, or an error when fallback is 0. */
int hf_config_int(const char *path, const cJSON *root, const char *key, int fallback);
/* A positive number; absent: fallback, or an error when fallback is 0. */
float hf_config_float(const char *path, const cJSON *root, const char *key, float fallback);
/* A boolean; absent: fallback. */
int hf_config_bool(const char *path, const cJSON *root, const char *key, int fallback);
/* Ends the job unless key is absent or one of the values (NULL-terminated): what the
 * runtime computes is only those. */
void hf_config_expect_string(const char *path, const cJSON *root, const char *key, const char *const *values);
/* Ends the job unless key is absent or the number value. */
void hf_config_expect_number(const char *path, const cJSON *root, const char *key, double value);

/* The shortest decimal that reads back as v (1e-5f is 1e-05, not the 9.99999975e-06 its
 * double is); an integer with ".0", as Python writes a float. */
void hf_config_add_float(cJSON *root, const char *key, float v);
/* torch's name of the dtype a model is saved in: "float32", "bfloat16", "float16". */
const char *hf_config_torch_dtype(enum dtype d);

#endif
