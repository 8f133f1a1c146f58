/* A loaded tokenizer: its tokens' bytes, added tokens by content, and freeing it. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

void text_tokenizer_free(struct text_tokenizer *t) {
  if (!t) return;
  token_table_free(&t->tokens);
  bytes_map_free(&t->vocab);
  merge_map_free(&t->merges);
  pcre2_code_free(t->pattern);
  free(t->added.ids);
  free(t);
}

int text_tokenizer_vocab_size(const struct text_tokenizer *t) { return t->vocab_size; }

const unsigned char *text_tokenizer_bytes(const struct text_tokenizer *t, int id, size_t *length) {
  *length = t->tokens.length[id];
  return token_table_bytes(&t->tokens, (uint32_t)id);
}

int text_tokenizer_added(const struct text_tokenizer *t, const char *text) {
  size_t n = strlen(text);
  unsigned char first = (unsigned char)text[0];
  for (int i = t->added.first[first]; i < t->added.first[first + 1]; i++) {
    uint32_t id = t->added.ids[i];
    if (t->tokens.length[id] == n && memcmp(token_table_bytes(&t->tokens, id), text, n) == 0) return (int)id;
  }
  return -1;
}

int text_tokenizer_document_token(const struct text_tokenizer *t) { return t->document_token; }
