#include "llmc_tokenizer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"

enum { HEADER_WORDS = 256, HEADER_BYTES = HEADER_WORDS * 4 };
/* GPT-2's file is half a megabyte; a vocabulary of 2^18 tokens of 255 bytes fits. */
enum { MAX_FILE_BYTES = 64 << 20 };

static uint32_t read_le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

void llmc_tokenizer_load(struct llmc_tokenizer *t, const char *flag, const char *path) {
  size_t size;
  unsigned char *data = (unsigned char *)input_file_read_all(flag, path, MAX_FILE_BYTES, &size);
  if (size < HEADER_BYTES) fsdp_fatal("%s %s: shorter than the tokenizer header (%d uint32)", flag, path, HEADER_WORDS);
  uint32_t magic = read_le32(data), version = read_le32(data + 4), vocab_size = read_le32(data + 8);
  if (magic != LLMC_TOKENIZER_MAGIC)
    fsdp_fatal("%s %s: not an llm.c tokenizer file (magic %u, not %d)", flag, path, magic, LLMC_TOKENIZER_MAGIC);
  /* Version 2 adds the end-of-text id in the header's 4th word; the tokens are laid out alike. */
  if (version != 1 && version != 2) fsdp_fatal("%s %s: unknown tokenizer version %u", flag, path, version);
  /* Each token takes at least its length byte: a count the file cannot hold is refused
   * before anything is allocated for it. */
  if (vocab_size < 1 || vocab_size > size - HEADER_BYTES)
    fsdp_fatal("%s %s: a vocabulary of %u tokens in a file of %zu bytes", flag, path, vocab_size, size);
  t->vocab_size = (int)vocab_size;
  t->bytes = fsdp_xcalloc((size_t)t->vocab_size, sizeof *t->bytes);
  t->length = fsdp_xcalloc((size_t)t->vocab_size, sizeof *t->length);
  size_t at = HEADER_BYTES;
  for (int i = 0; i < t->vocab_size; i++) {
    if (at == size) fsdp_fatal("%s %s: ends at token %d of the %d its header announces", flag, path, i, t->vocab_size);
    t->length[i] = data[at++];
    if (t->length[i] > size - at) fsdp_fatal("%s %s: ends inside token %d", flag, path, i);
    t->bytes[i] = fsdp_xmalloc(t->length[i] + 1u);
    memcpy(t->bytes[i], data + at, t->length[i]);
    at += t->length[i];
  }
  if (at != size) fsdp_fatal("%s %s: bytes after the last of its %d tokens", flag, path, t->vocab_size);
  free(data);
}

void llmc_tokenizer_free(struct llmc_tokenizer *t) {
  for (int i = 0; i < t->vocab_size; i++) free(t->bytes[i]);
  free(t->bytes);
  free(t->length);
}

void llmc_tokenizer_print(const struct llmc_tokenizer *t, int id, FILE *out) {
  if (id < t->vocab_size)
    fwrite(t->bytes[id], 1, t->length[id], out);
  else
    fprintf(out, "<|%d|>", id);
}
