#include "llmc_tokenizer.h"

#include <stdint.h>
#include <stdlib.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"

enum { HEADER_WORDS = 256 };

void llmc_tokenizer_load(struct llmc_tokenizer *t, const char *flag, const char *path) {
  struct input_file file;
  input_file_open(&file, flag, path);
  FILE *f = input_file_stream(&file, flag);
  uint32_t header[HEADER_WORDS];
  if (fread(header, sizeof header[0], HEADER_WORDS, f) != HEADER_WORDS)
    fsdp_fatal("%s %s: shorter than the tokenizer header (%d uint32)", flag, path, HEADER_WORDS);
  if (header[0] != LLMC_TOKENIZER_MAGIC)
    fsdp_fatal("%s %s: not an llm.c tokenizer file (magic %u, not %d)", flag, path, header[0], LLMC_TOKENIZER_MAGIC);
  /* Version 2 adds the end-of-text id in header[3]; the tokens are laid out alike. */
  if (header[1] != 1 && header[1] != 2) fsdp_fatal("%s %s: unknown tokenizer version %u", flag, path, header[1]);
  if (header[2] < 1 || header[2] > INT32_MAX)
    fsdp_fatal("%s %s: a vocabulary of %u tokens", flag, path, header[2]);
  t->vocab_size = (int)header[2];
  t->bytes = fsdp_xcalloc((size_t)t->vocab_size, sizeof *t->bytes);
  t->length = fsdp_xcalloc((size_t)t->vocab_size, sizeof *t->length);
  for (int i = 0; i < t->vocab_size; i++) {
    if (fread(&t->length[i], 1, 1, f) != 1)
      fsdp_fatal("%s %s: ends at token %d of the %d its header announces", flag, path, i, t->vocab_size);
    t->bytes[i] = fsdp_xmalloc(t->length[i] + 1u);
    if (fread(t->bytes[i], 1, t->length[i], f) != t->length[i])
      fsdp_fatal("%s %s: ends inside token %d", flag, path, i);
  }
  if (fgetc(f) != EOF) fsdp_fatal("%s %s: bytes after the last of its %d tokens", flag, path, t->vocab_size);
  fclose(f);
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
