/* --data read as text through --tokenizer (train, eval): one document, tokenized in
 * memory on the cores this rank may use, with the code of fsdp tokenize, so that its ids
 * are those of `fsdp tokenize --tokenizer T --output X.bin FILE` after the header. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/cores.h"
#include "fsdp/data.h"
#include "fsdp/error.h"
#include "fsdp/text.h"
#include "text_input.h"

static void collect(void *context, const uint32_t *ids, size_t n) { token_vec_append(context, ids, n); }

void token_data_tokenize(struct token_data *d, const char *path, const char *tokenizer, int vocab_size) {
  struct text_tokenizer *t = text_tokenizer_load("--tokenizer", tokenizer);
  int n_vocab = text_tokenizer_vocab_size(t);
  if (n_vocab > vocab_size)
    fsdp_fatal("--tokenizer '%s' has %d tokens, more than the model's vocab size %d (--vocab-size)", tokenizer,
               n_vocab, vocab_size);
  struct text_encoder *e = text_encoder_create(t, available_cores(), 0);
  struct token_vec ids = {0};
  struct text_stream *s = text_stream_create(e, 0, text_tokenizer_document_token(t), collect, &ids);
  size_t size = strlen(path) + sizeof "--data ''";
  char *origin = fsdp_xmalloc(size);
  snprintf(origin, size, "--data '%s'", path);
  text_stream_origin(s, origin, 0, 0);
  text_input_file(s, "--data", path, NULL, NULL);
  text_stream_finish(s);
  free(origin);
  text_encoder_free(e);
  text_tokenizer_free(t);
  if (ids.n == 0) fsdp_fatal("--data '%s' is empty", path);
  d->format = TOKENS_TOKENIZED;
  d->n_tokens = ids.n;
  /* Kept at the width a token file of this vocabulary would have. */
  if (n_vocab <= 65536) {
    d->width = 2;
    uint16_t *narrow = fsdp_xcalloc(ids.n, sizeof *narrow);
    for (size_t i = 0; i < ids.n; i++) narrow[i] = (uint16_t)ids.ids[i];
    d->tokens = narrow;
    token_vec_free(&ids);
  } else {
    d->width = 4;
    d->tokens = ids.ids;
  }
}
