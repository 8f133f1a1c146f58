#include "hf_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

const cJSON *hf_config_get(const cJSON *root, const char *key) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, key);
  return item && !cJSON_IsNull(item) ? item : NULL;
}

int hf_config_int(const char *path, const cJSON *root, const char *key, int fallback) {
  const cJSON *item = hf_config_get(root, key);
  if (!item) {
    if (!fallback) fsdp_fatal("%s: no \"%s\"", path, key);
    return fallback;
  }
  double v = cJSON_IsNumber(item) ? item->valuedouble : 0.0;
  if (!cJSON_IsNumber(item) || v != floor(v) || v < 1)
    fsdp_fatal("%s: \"%s\" is not a positive integer", path, key);
  if (v > 2147483647.0) fsdp_fatal("%s: \"%s\" is %.17g, beyond a C int's 2147483647", path, key, v);
  return (int)v;
}

float hf_config_float(const char *path, const cJSON *root, const char *key, float fallback) {
  const cJSON *item = hf_config_get(root, key);
  if (!item) {
    if (fallback == 0.0f) fsdp_fatal("%s: no \"%s\"", path, key);
    return fallback;
  }
  if (!cJSON_IsNumber(item) || !((float)item->valuedouble > 0) || !isfinite((float)item->valuedouble))
    fsdp_fatal("%s: \"%s\" is not a positive fp32 number", path, key);
  return (float)item->valuedouble;
}

int hf_config_bool(const char *path, const cJSON *root, const char *key, int fallback) {
  const cJSON *item = hf_config_get(root, key);
  if (!item) return fallback;
  if (!cJSON_IsBool(item)) fsdp_fatal("%s: \"%s\" is not true or false", path, key);
  return cJSON_IsTrue(item);
}

void hf_config_expect_string(const char *path, const cJSON *root, const char *key, const char *const *values) {
  const cJSON *item = hf_config_get(root, key);
  if (!item) return;
  if (cJSON_IsString(item))
    for (const char *const *v = values; *v; v++)
      if (strcmp(item->valuestring, *v) == 0) return;
  fsdp_fatal("%s: \"%s\" must be \"%s\" here%s%s", path, key, values[0], cJSON_IsString(item) ? ", not " : "",
             cJSON_IsString(item) ? item->valuestring : "");
}

void hf_config_expect_number(const char *path, const cJSON *root, const char *key, double value) {
  const cJSON *item = hf_config_get(root, key);
  if (!item) return;
  if (!cJSON_IsNumber(item) || (float)item->valuedouble != (float)value)
    fsdp_fatal("%s: \"%s\" must be %g here (what the runtime computes with)", path, key, value);
}

void hf_config_add_float(cJSON *root, const char *key, float v) {
  char text[48];
  if (v == floorf(v) && fabsf(v) < 1e15f) {
    snprintf(text, sizeof text, "%.1f", (double)v); /* 500000.0, not 5e+05 */
  } else {
    for (int digits = 1; digits <= 9; digits++) {
      snprintf(text, sizeof text, "%.*g", digits, (double)v);
      if (strtof(text, NULL) == v) break;
    }
  }
  cJSON_AddItemToObject(root, key, cJSON_CreateRaw(text));
}

const char *hf_config_torch_dtype(enum dtype d) {
  switch (d) {
    case DTYPE_BF16: return "bfloat16";
    case DTYPE_F16: return "float16";
    default: return "float32";
  }
}
