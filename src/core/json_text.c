#define _GNU_SOURCE /* memmem */
#include "fsdp/json_text.h"

#include <string.h>

long json_nul_escape(const char *text, size_t length) {
  for (const char *at = text; (at = memmem(at, length - (size_t)(at - text), "u0000", 5)); at += 5) {
    size_t backslashes = 0;
    while (at - backslashes > text && at[-1 - (long)backslashes] == '\\') backslashes++;
    if (backslashes % 2 == 1) return (long)(at - 1 - text);
  }
  return -1;
}
