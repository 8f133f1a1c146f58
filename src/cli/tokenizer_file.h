/* Private to src/cli: fsdp sample's --tokenizer, of either kind, told apart by its
 * content: a Hugging Face tokenizer.json (a JSON object; encodes and decodes) or llm.c's
 * gpt2_tokenizer.bin (magic 20240328; decodes only). */
#ifndef FSDP_CLI_TOKENIZER_FILE_H
#define FSDP_CLI_TOKENIZER_FILE_H

#include <stdio.h>

#include "fsdp/text.h"
#include "llmc_tokenizer.h"

struct tokenizer_file {
  struct text_tokenizer *json; /* or NULL: */
  struct llmc_tokenizer llmc;
  int vocab_size;
  /* A tokenizer.json's document token and end-of-text tokens: a generation stops at them. */
  int stops[4];
  int n_stops;
};

/* Reads the file at path; anything else ends the job naming flag and path. */
void tokenizer_file_load(struct tokenizer_file *t, const char *flag, const char *path);
void tokenizer_file_free(struct tokenizer_file *t);
/* A tokenizer.json: text as a document starts, the document token then its ids
 * (*n of them, malloc'd). */
int *tokenizer_file_encode(const struct tokenizer_file *t, const char *text, int *n);
/* Writes id's bytes to out. */
void tokenizer_file_print(const struct tokenizer_file *t, int id, FILE *out);
int tokenizer_file_stops_at(const struct tokenizer_file *t, int id);

#endif
