#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "fsdp/text.h"
#include "llmc_tokenizer.h"

/* What Hugging Face's tokenizers end a text with: GPT-2's, Llama 3's, Llama 3 instruct's. */
static const char *const END_TOKENS[] = {"<|endoftext|>", "<|end_of_text|>", "<|eot_id|>"};
enum { SNIFF_BYTES = 64 };

/* 1: llm.c's file (by its magic), 0: JSON (an object, after any white space); else the
 * job ends, saying what was found. */
static int is_llmc(const char *flag, const char *path) {
  struct input_file f;
  input_file_open(&f, flag, path);
  unsigned char head[SNIFF_BYTES];
  size_t n = f.size < sizeof head ? f.size : sizeof head;
  input_file_read_at(&f, flag, head, n, 0);
  input_file_close(&f);
  if (n >= 4 && (head[0] | head[1] << 8 | head[2] << 16 | (uint32_t)head[3] << 24) == LLMC_TOKENIZER_MAGIC) return 1;
  size_t i = 0;
  while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n')) i++;
  if (i < n && head[i] == '{') return 0;
  fsdp_fatal("%s '%s' is neither a Hugging Face tokenizer.json (a JSON object) nor llm.c's tokenizer file (magic "
             "%d)",
             flag, path, LLMC_TOKENIZER_MAGIC);
}

void tokenizer_file_load(struct tokenizer_file *t, const char *flag, const char *path) {
  memset(t, 0, sizeof *t);
  if (is_llmc(flag, path)) {
    t->llmc = fsdp_xcalloc(1, sizeof *t->llmc);
    llmc_tokenizer_load(t->llmc, flag, path);
    t->vocab_size = t->llmc->vocab_size;
    return;
  }
  t->json = text_tokenizer_load(flag, path);
  t->vocab_size = text_tokenizer_vocab_size(t->json);
  int document = text_tokenizer_document_token(t->json);
  if (document >= 0) t->stops[t->n_stops++] = document;
  for (int i = 0; i < 3; i++) {
    int id = text_tokenizer_added(t->json, END_TOKENS[i]);
    if (id >= 0 && id != document) t->stops[t->n_stops++] = id;
  }
}

void tokenizer_file_free(struct tokenizer_file *t) {
  if (t->json) {
    text_tokenizer_free(t->json);
  } else {
    llmc_tokenizer_free(t->llmc);
    free(t->llmc);
  }
}

int *tokenizer_file_encode(const struct tokenizer_file *t, const char *text, int *n) {
  struct token_vec ids = {0};
  int document = text_tokenizer_document_token(t->json);
  if (document >= 0) token_vec_push(&ids, (uint32_t)document);
  struct text_encoder *e = text_encoder_create(t->json, 1, 0);
  text_encode(e, text, strlen(text), &ids);
  text_encoder_free(e);
  int *out = fsdp_xcalloc(ids.n + 1, sizeof *out);
  for (size_t i = 0; i < ids.n; i++) out[i] = (int)ids.ids[i];
  *n = (int)ids.n;
  token_vec_free(&ids);
  return out;
}

void tokenizer_file_print(const struct tokenizer_file *t, int id, FILE *out) {
  if (!t->json) {
    llmc_tokenizer_print(t->llmc, id, out);
    return;
  }
  if (id >= t->vocab_size) {
    fprintf(out, "<|%d|>", id);
    return;
  }
  size_t length;
  const unsigned char *bytes = text_tokenizer_bytes(t->json, id, &length);
  fwrite(bytes, 1, length, out);
}

int tokenizer_file_stops_at(const struct tokenizer_file *t, int id) {
  for (int i = 0; i < t->n_stops; i++)
    if (t->stops[i] == id) return 1;
  return 0;
}
