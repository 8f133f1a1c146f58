/* Private to src/text: a pre-tokenizer's pattern, written for Oniguruma (Hugging Face's
 * regex engine), compiled with PCRE2. */
#ifndef FSDP_TEXT_PATTERN_H
#define FSDP_TEXT_PATTERN_H

#include <stddef.h>

#include "tokenizer.h"

/* The compiled pattern, or NULL with the reason in why. */
pcre2_code *pattern_compile(const char *pattern, char *why, size_t why_size);
/* The compiled pattern made machine code, for speed (the same matches). */
void pattern_jit(pcre2_code *re);

#endif
