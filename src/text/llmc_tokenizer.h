/* Private to src/text: llm.c's GPT-2 tokenizer file, for printing token ids as text. */
#ifndef FSDP_TEXT_LLMC_TOKENIZER_H
#define FSDP_TEXT_LLMC_TOKENIZER_H

#include <stddef.h>
#include <stdio.h>

enum { LLMC_TOKENIZER_MAGIC = 20240328 };

/* Each token's bytes, as llm.c's gpt2_tokenizer.bin holds them. */
struct llmc_tokenizer {
  int vocab_size;
  unsigned char **bytes; /* bytes[i]: length[i] bytes (not terminated) */
  unsigned char *length;
};

/* Reads the file: a header of 256 uint32 (magic 20240328, version 1 or 2, the vocab
 * size, ...), then per token a uint8 length and that many bytes. Any problem ends the
 * job with a message naming flag and the file. */
void llmc_tokenizer_load(struct llmc_tokenizer *t, const char *flag, const char *path);
void llmc_tokenizer_free(struct llmc_tokenizer *t);
/* Writes token id's bytes; an id past the file's vocabulary as <|id|>. */
void llmc_tokenizer_print(const struct llmc_tokenizer *t, int id, FILE *out);

#endif
