/* A tokenizer file as `fsdp sample --tokenizer` reads it, of either kind: a Hugging Face
 * tokenizer.json or llm.c's tokenizer.bin. A tokenizer.json that loads must then encode
 * a text of every kind of byte into ids below its vocabulary size that decode back to
 * the text (decode(encode(x)) == x holds for every tokenizer fsdp accepts). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/text.h"
#include "fuzz.h"

static const char SAMPLE[] =
    "Hello world! It's 2024: we'll see 123456 tokens\r\n\tand   spaces  \n\n"
    "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 e\xcc\x81 \xe2\x80\x8b"
    "<|endoftext|><|begin_of_text|>x<|end_of_text|> "
    "\xff\xfe\xc0\x80 \xed\xa0\x80 \x00\x01\x7f";

static char *path;
static struct tokenizer_file tokenizer;

static void load(void *context) {
  (void)context;
  tokenizer_file_load(&tokenizer, "--tokenizer", path);
}

static void round_trip(void *context) {
  (void)context;
  struct text_encoder *e = text_encoder_create(tokenizer.json, 1, 0);
  struct token_vec ids = {0};
  text_encode(e, SAMPLE, sizeof SAMPLE - 1, &ids);
  text_encoder_free(e);
  char decoded[sizeof SAMPLE];
  size_t n = 0;
  for (size_t i = 0; i < ids.n; i++) {
    if (ids.ids[i] >= (uint32_t)tokenizer.vocab_size)
      fuzz_finding("id %u encoded, outside the vocabulary of %d", ids.ids[i], tokenizer.vocab_size);
    size_t length;
    const unsigned char *bytes = text_tokenizer_bytes(tokenizer.json, (int)ids.ids[i], &length);
    if (length > sizeof SAMPLE - 1 - n) fuzz_finding("the ids decode to more than the text");
    memcpy(decoded + n, bytes, length);
    n += length;
  }
  if (n != sizeof SAMPLE - 1 || memcmp(decoded, SAMPLE, n) != 0)
    fuzz_finding("the text's %zu ids decode to %zu bytes that are not the text", ids.n, n);
  token_vec_free(&ids);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  path = fuzz_path("tokenizer.json");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(path, data, size);
  if (fuzz_read(load, NULL) != 0) return 0;
  if (tokenizer.json) fuzz_read(round_trip, NULL);
  tokenizer_file_free(&tokenizer);
  return 0;
}
