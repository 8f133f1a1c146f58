/* Text as `fsdp tokenize` reads it, through a GPT-2 style and a Llama 3 style tokenizer
 * (the first byte of the input picks one; corpus/tokenizer/ holds them): the ids are
 * below the vocabulary size and decode back to the text, and they are the same on 3
 * threads cutting the text into parts of 7 bytes, and through the document stream in
 * windows of 5 bytes, as on one thread in one piece. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/text.h"
#include "fuzz.h"

enum { TOKENIZERS = 2, PART_BYTES = 7, WINDOW_BYTES = 5 };
static const char *const NAMES[TOKENIZERS] = {FUZZ_TOKENIZERS "/gpt2-style.json",
                                              FUZZ_TOKENIZERS "/llama3-style.json"};

struct tokenizer {
  struct text_tokenizer *t;
  struct text_encoder *one, *three;
};
static struct tokenizer tokenizers[TOKENIZERS];

static void collect(void *context, const uint32_t *ids, size_t n) { token_vec_append(context, ids, n); }

static void check_decodes(const struct text_tokenizer *t, const struct token_vec *ids, const uint8_t *text,
                          size_t size) {
  size_t at = 0;
  for (size_t i = 0; i < ids->n; i++) {
    if (ids->ids[i] >= (uint32_t)text_tokenizer_vocab_size(t))
      fuzz_finding("id %u: outside the vocabulary", ids->ids[i]);
    size_t length;
    const unsigned char *bytes = text_tokenizer_bytes(t, (int)ids->ids[i], &length);
    if (length > size - at || memcmp(bytes, text + at, length) != 0)
      fuzz_finding("id %zu of %zu does not decode to the text's bytes from %zu", i, ids->n, at);
    at += length;
  }
  if (at != size) fuzz_finding("the ids decode to %zu bytes of the text's %zu", at, size);
}

static void check_same(const struct token_vec *a, const struct token_vec *b, const char *how) {
  if (a->n != b->n || (a->n > 0 && memcmp(a->ids, b->ids, a->n * sizeof *a->ids) != 0))
    fuzz_finding("%zu ids on one thread, %zu %s, not the same", a->n, b->n, how);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  for (int i = 0; i < TOKENIZERS; i++) {
    tokenizers[i].t = text_tokenizer_load("tokenizer", NAMES[i]);
    tokenizers[i].one = text_encoder_create(tokenizers[i].t, 1, 0);
    tokenizers[i].three = text_encoder_create(tokenizers[i].t, 3, PART_BYTES);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const struct tokenizer *k = &tokenizers[data[0] % TOKENIZERS];
  const uint8_t *text = data + 1;
  size--;

  struct token_vec one = {0}, three = {0}, streamed = {0};
  text_encode(k->one, text, size, &one);
  check_decodes(k->t, &one, text, size);
  text_encode(k->three, text, size, &three);
  check_same(&one, &three, "on 3 threads");
  struct text_stream *s = text_stream_create(k->one, WINDOW_BYTES, -1, collect, &streamed);
  text_stream_write(s, text, size);
  text_stream_finish(s);
  check_same(&one, &streamed, "through the stream");
  token_vec_free(&one);
  token_vec_free(&three);
  token_vec_free(&streamed);
  return 0;
}
