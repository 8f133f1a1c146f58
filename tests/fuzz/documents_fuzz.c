/* The readers of fsdp tokenize's inputs, on one file (gzip when it starts as gzip does):
 * as JSON Lines with the key "text", cut into chunks of 7 bytes and of a megabyte (the
 * documents, or the refusal, must not depend on where the chunks end: the line numbers
 * are counted across them), and as a text file with the separator "\n\n" (its documents,
 * joined by the separator, must be the file). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fuzz.h"
#include "jsonl_input.h"
#include "text_input.h"

static char *path;
static const uint8_t *input;
static size_t input_size;

/* Documents as a reader hands them over: their texts one after another, and their ends. */
struct documents {
  char *text;
  size_t n, cap;
  size_t *ends; /* text[ends[i - 1], ends[i]) is document i */
  size_t n_docs, docs_cap;
};

static void write_text(void *context, const void *text, size_t n) {
  struct documents *d = context;
  if (n == 0) return;
  d->text = fsdp_xgrow(d->text, &d->cap, d->n + n, 1, 256);
  memcpy(d->text + d->n, text, n);
  d->n += n;
}

static void end_document(void *context) {
  struct documents *d = context;
  d->ends = fsdp_xgrow(d->ends, &d->docs_cap, d->n_docs + 1, sizeof *d->ends, 16);
  d->ends[d->n_docs++] = d->n;
}

/* After a refusal, what the reader had allocated is reclaimed already: only forgotten. */
/* memcmp that takes empty arrays, which may be NULL. */
static int differ(const void *a, const void *b, size_t n) { return n > 0 && memcmp(a, b, n) != 0; }

static void documents_free(struct documents *d, int refused) {
  if (!refused) {
    free(d->text);
    free(d->ends);
  }
  memset(d, 0, sizeof *d);
}

static void on_chunk(void *context, char *lines, size_t n, long first_line, size_t file_bytes) {
  (void)file_bytes;
  struct document_sink sink = {write_text, end_document, NULL, context};
  jsonl_input_lines("input", path, "text", lines, n, first_line, &sink);
  free(lines);
}

static struct documents small, large, text;

static void read_small(void *context) {
  (void)context;
  jsonl_input_chunks("input", path, 7, on_chunk, &small);
}

static void read_large(void *context) {
  (void)context;
  jsonl_input_chunks("input", path, 1 << 20, on_chunk, &large);
}

static void read_text(void *context) {
  (void)context;
  static const struct text_separator sep = {"\n\n", 2};
  struct document_sink sink = {write_text, end_document, NULL, &text};
  text_input_read("input", path, &sep, &sink);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  path = fuzz_path("documents.jsonl");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_write(path, data, size);
  input = data;
  input_size = size;
  int refused_small = fuzz_read(read_small, NULL), refused_large = fuzz_read(read_large, NULL);
  if (refused_small != refused_large)
    fuzz_finding("read in chunks of 7 bytes the file is %s, in chunks of a megabyte %s",
                 refused_small ? "refused" : "read", refused_large ? "refused" : "read");
  if (!refused_small) {
    if (small.n_docs != large.n_docs || small.n != large.n || differ(small.text, large.text, small.n) ||
        differ(small.ends, large.ends, small.n_docs * sizeof *small.ends))
      fuzz_finding("chunks of 7 bytes give %zu documents of %zu bytes, chunks of a megabyte %zu of %zu",
                   small.n_docs, small.n, large.n_docs, large.n);
    for (size_t i = 0; i < small.n; i++)
      if (small.text[i] == 0) fuzz_finding("a document holds a NUL at byte %zu, which cJSON would have cut at", i);
  }
  documents_free(&small, refused_small);
  documents_free(&large, refused_large);
  int gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  int refused_text = fuzz_read(read_text, NULL);
  if (!refused_text && !gzip) {
    /* The documents joined by the separator are the file, byte for byte. */
    size_t at = 0, start = 0;
    for (size_t i = 0; i < text.n_docs; i++) {
      size_t length = text.ends[i] - start;
      if (at + length > input_size || (length > 0 && memcmp(input + at, text.text + start, length) != 0))
        fuzz_finding("text document %zu is not the file's bytes at %zu", i, at);
      at += length;
      start = text.ends[i];
      if (i + 1 < text.n_docs) {
        if (at + 2 > input_size || memcmp(input + at, "\n\n", 2) != 0)
          fuzz_finding("no separator in the file after text document %zu", i);
        at += 2;
      }
    }
    if (at != input_size) fuzz_finding("the text documents cover %zu of the file's %zu bytes", at, input_size);
  }
  documents_free(&text, refused_text);
  return 0;
}
