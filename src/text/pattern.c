/* The two engines agree on the syntax these patterns use but for \s: Oniguruma's is
 * Unicode's White_Space, PCRE2's (with PCRE2_UCP) takes in U+180E as well, which would
 * cut "\u180e's" other than Hugging Face does. So \s and \S become \p{White_Space} and
 * \P{White_Space}, inside a class or outside. */
#include "pattern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

static char *translate(const char *pattern) {
  static const char SPACE[] = "\\p{White_Space}", NOT_SPACE[] = "\\P{White_Space}";
  char *out = fsdp_xmalloc(strlen(pattern) * (sizeof SPACE - 1) + 1), *o = out;
  for (const char *p = pattern; *p;) {
    if (p[0] != '\\' || p[1] == '\0') {
      *o++ = *p++;
    } else if (p[1] == 's' || p[1] == 'S') {
      const char *with = p[1] == 's' ? SPACE : NOT_SPACE;
      memcpy(o, with, strlen(with));
      o += strlen(with);
      p += 2;
    } else if (p[1] == 'Q') { /* quoted up to \E: copied as it is */
      const char *end = strstr(p + 2, "\\E");
      size_t n = end ? (size_t)(end + 2 - p) : strlen(p);
      memcpy(o, p, n);
      o += n;
      p += n;
    } else {
      *o++ = *p++;
      *o++ = *p++;
    }
  }
  *o = '\0';
  return out;
}

/* Pieces are matched one at a time from their own start (so that the text can be cut
 * anywhere for threads, encode.c): a pattern that looks behind a piece's start would see
 * other text than Hugging Face's, and one that matches nothing would never move on. */
pcre2_code *pattern_compile(const char *pattern, char *why, size_t why_size) {
  char *translated = translate(pattern);
  int code;
  PCRE2_SIZE offset;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)translated, PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &offset, NULL);
  free(translated);
  if (!re) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof message);
    snprintf(why, why_size, "the pre-tokenizer's pattern does not compile (PCRE2: %s)", (const char *)message);
    return NULL;
  }
  uint32_t lookbehind = 0, min_length = 0;
  pcre2_pattern_info(re, PCRE2_INFO_MAXLOOKBEHIND, &lookbehind);
  pcre2_pattern_info(re, PCRE2_INFO_MINLENGTH, &min_length);
  const char *problem = lookbehind > 0  ? "looks behind (\\b, \\B, \\A or (?<=...)), which is not supported"
                        : min_length == 0 ? "can match the empty string"
                                          : NULL;
  if (problem) {
    snprintf(why, why_size, "the pre-tokenizer's pattern %s", problem);
    pcre2_code_free(re);
    return NULL;
  }
  return re;
}

/* Without a JIT (a platform PCRE2 has none for), pcre2_match interprets: slower, the same. */
void pattern_jit(pcre2_code *re) { pcre2_jit_compile(re, PCRE2_JIT_COMPLETE | PCRE2_JIT_PARTIAL_HARD); }
