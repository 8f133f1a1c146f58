#define _GNU_SOURCE /* memmem */
#include "fsdp/json_text.h"

#include <stdio.h>
#include <string.h>

long json_nul_escape(const char *text, size_t length) {
  for (const char *at = text; (at = memmem(at, length - (size_t)(at - text), "u0000", 5)); at += 5) {
    size_t backslashes = 0;
    while (at - backslashes > text && at[-1 - (long)backslashes] == '\\') backslashes++;
    if (backslashes % 2 == 1) return (long)(at - 1 - text);
  }
  return -1;
}

/* The code unit of the \uXXXX escape at text[i] (its backslash), or -1 where there is none. */
static long escaped_unit(const char *text, size_t length, size_t i) {
  unsigned unit;
  char hex[5];
  if (i + 6 > length || text[i] != '\\' || text[i + 1] != 'u') return -1;
  memcpy(hex, text + i + 2, 4);
  hex[4] = '\0';
  return strspn(hex, "0123456789abcdefABCDEF") == 4 && sscanf(hex, "%x", &unit) == 1 ? (long)unit : -1;
}

long json_lone_surrogate(const char *text, size_t length) {
  for (size_t i = 0; i < length; i++) {
    if (text[i] != '\\') continue;
    long unit = escaped_unit(text, length, i);
    if (unit < 0) {
      i++; /* another escape: its character is not a backslash to look at */
      continue;
    }
    long next = unit >= 0xd800 && unit <= 0xdbff ? escaped_unit(text, length, i + 6) : -1;
    if (unit >= 0xd800 && unit <= 0xdfff && !(next >= 0xdc00 && next <= 0xdfff)) return (long)i;
    i += next >= 0 ? 11 : 5;
  }
  return -1;
}
