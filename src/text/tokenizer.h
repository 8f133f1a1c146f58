/* Private to src/text: what a tokenizer.json becomes. */
#ifndef FSDP_TEXT_TOKENIZER_H
#define FSDP_TEXT_TOKENIZER_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "fsdp/text.h"
#include "maps.h"

/* Added tokens, looked for in the text before anything else, the longest where several
 * begin at one place (as Hugging Face's). */
struct added_tokens {
  int n;
  uint32_t *ids;           /* in the order of their bytes, then of their ids */
  int first[257];          /* ids[first[b] .. first[b + 1]) start with byte b */
  size_t max_length;
};

struct text_tokenizer {
  int vocab_size;
  struct token_table tokens; /* every id's bytes */
  struct bytes_map vocab;    /* the model's byte-level tokens by their bytes */
  struct merge_map merges;
  uint32_t byte_token[256];  /* the one-byte tokens */
  int ignore_merges;         /* a piece that is a token is that token, unmerged (Llama 3) */
  pcre2_code *pattern;       /* the pre-tokenizer's, JIT-compiled, complete and partial */
  struct added_tokens added;
  int document_token;
  char name[288]; /* "WHAT 'PATH'", as load errors name the file: for errors while encoding */
};

#endif
