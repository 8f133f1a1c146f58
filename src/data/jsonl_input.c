/* JSON Lines files as documents. Lines are parsed by cJSON one at a time, so a file never
 * has to fit in memory; only a line does. */
#define _GNU_SOURCE /* memrchr */
#include <cJSON.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl_input.h"

#include "byte_source.h"
#include "fsdp/error.h"
#include "fsdp/json_text.h"

enum { READ_BYTES = 1 << 20 };

struct jsonl_file {
  const char *what, *path, *key;
  const struct document_sink *sink;
  long line; /* the number of the line being read, from 1 */
};

static int blank(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n') return 0;
  return 1;
}

static const char *kind(const cJSON *v) {
  return cJSON_IsNull(v) ? "null" : cJSON_IsBool(v) ? "a boolean" : cJSON_IsNumber(v) ? "a number"
         : cJSON_IsString(v) ? "a string" : cJSON_IsArray(v) ? "an array" : "an object";
}

static void line_document(struct jsonl_file *f, const char *p, size_t n) {
  if (f->line == 1 && n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) { /* a byte order mark */
    p += 3;
    n -= 3;
  }
  if (blank(p, n)) return;
  /* JSON has no raw control characters, which cJSON lets through in strings: a NUL there
   * would cut the text short unseen; so would an escaped one. */
  const char *nul = memchr(p, 0, n);
  if (nul)
    fsdp_fatal("%s '%s': line %ld: a NUL byte (at byte %ld of the line), which JSON text cannot hold", f->what,
               f->path, f->line, (long)(nul - p) + 1);
  long escape = json_nul_escape(p, n);
  if (escape >= 0)
    fsdp_fatal("%s '%s': line %ld: a \\u0000 escape (at byte %ld of the line): a NUL inside a string is not "
               "supported (it would cut the text)", f->what, f->path, f->line, escape + 1);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(p, n, &end, 0);
  long surrogate = root ? -1 : json_lone_surrogate(p, n);
  if (surrogate >= 0)
    fsdp_fatal("%s '%s': line %ld: a lone UTF-16 surrogate escape, %.6s (at byte %ld of the line): JSON allows it, "
               "but no UTF-8 text can hold it",
               f->what, f->path, f->line, p + surrogate, surrogate + 1);
  if (!root)
    fsdp_fatal("%s '%s': line %ld: not JSON (it goes wrong at byte %ld of the line)", f->what, f->path, f->line,
               end ? (long)(end - p) + 1 : 1L);
  /* The tree is freed before the job ends on it: a refusal caught on a parsing thread
   * leaves nothing behind (LeakSanitizer would count it). */
  char why[512] = "";
  const cJSON *text = NULL;
  if (!blank(end, n - (size_t)(end - p)))
    snprintf(why, sizeof why, "more after the JSON value (at byte %ld of the line): a JSON Lines file holds one "
             "value a line", (long)(end - p) + 1);
  else if (!cJSON_IsObject(root))
    snprintf(why, sizeof why, "%s, not a JSON object", kind(root));
  else if (!(text = cJSON_GetObjectItemCaseSensitive(root, f->key)))
    snprintf(why, sizeof why, "no member \"%.200s\" (--jsonl-key)", f->key);
  else if (!cJSON_IsString(text) || !text->valuestring)
    snprintf(why, sizeof why, "\"%.200s\" is %s, not a string", f->key, kind(text));
  if (why[0]) {
    cJSON_Delete(root);
    fsdp_fatal("%s '%s': line %ld: %s", f->what, f->path, f->line, why);
  }
  f->sink->write(f->sink->context, text->valuestring, strlen(text->valuestring));
  f->sink->end(f->sink->context);
  cJSON_Delete(root);
}

void jsonl_input_lines(const char *what, const char *path, const char *key, const char *lines, size_t n,
                       long first_line, const struct document_sink *sink) {
  struct jsonl_file f = {what, path, key, sink, first_line};
  size_t start = 0;
  for (const char *newline; (newline = memchr(lines + start, '\n', n - start));) {
    line_document(&f, lines + start, (size_t)(newline - lines) - start);
    f.line++;
    start = (size_t)(newline - lines) + 1;
  }
  if (start < n) line_document(&f, lines + start, n - start); /* a last line without its newline */
}

static long count_lines(const char *p, size_t n) {
  long lines = 0;
  for (const char *end = p + n; (p = memchr(p, '\n', (size_t)(end - p))); p++) lines++;
  return lines;
}

/* What jsonl_input_chunks holds, on the heap so that its catch point can free it. */
struct chunking {
  struct byte_source src;
  int open;
  char *buf;
};

void jsonl_input_chunks(const char *what, const char *path, size_t chunk_bytes, jsonl_chunk_fn *fn, void *context) {
  struct chunking *c = fsdp_xcalloc(1, sizeof *c);
  /* A failure (the file, its gzip data, a receiver stopping) frees what is held and goes
   * on to the caller's catch point: the reading thread ends with nothing leaked. */
  struct fsdp_catch failed;
  struct fsdp_catch *outer = fsdp_catch_set(&failed);
  if (setjmp(failed.jump) != 0) {
    if (c->open) byte_source_close(&c->src);
    free(c->buf);
    free(c);
    fsdp_catch_set(outer);
    fsdp_fatal("%s", failed.message);
  }
  byte_source_open(&c->src, what, path);
  c->open = 1;
  long line = 1;
  FSDP_CHECK(chunk_bytes > 0);
  /* Reads of a megabyte, or of a chunk where chunks are smaller (the fuzz target's). */
  size_t step = chunk_bytes < READ_BYTES ? chunk_bytes : READ_BYTES;
  size_t cap = chunk_bytes + step, len = 0, file_bytes = 0; /* buf[0, len): what no chunk took yet */
  c->buf = fsdp_xmalloc(cap);
  for (;;) {
    if (cap - len < step) { /* a line longer than a chunk */
      if (len > INPUT_JSON_MAX_BYTES && !memchr(c->buf, '\n', len))
        fsdp_fatal("%s '%s': line %ld is longer than %d MiB", what, path, line, INPUT_JSON_MAX_BYTES >> 20);
      c->buf = fsdp_xrealloc(c->buf, cap *= 2);
    }
    size_t read, n = byte_source_read(&c->src, c->buf + len, cap - len, &read);
    len += n;
    file_bytes += read;
    if (n == 0) break;
    const char *last = len >= chunk_bytes ? memrchr(c->buf, '\n', len) : NULL;
    if (!last) continue;
    /* The chunk takes this buffer; the rest, a part of a line, starts another. */
    size_t whole = (size_t)(last - c->buf) + 1, rest = len - whole;
    char *next = fsdp_xmalloc(cap);
    memcpy(next, c->buf + whole, rest);
    char *lines = c->buf;
    c->buf = next;
    long n_lines = count_lines(lines, whole);
    fn(context, lines, whole, line, file_bytes);
    line += n_lines;
    len = rest;
    file_bytes = 0;
  }
  if (len > 0 || file_bytes > 0) {
    char *lines = c->buf;
    c->buf = NULL;
    fn(context, lines, len, line, file_bytes);
  }
  fsdp_catch_set(outer);
  byte_source_close(&c->src);
  free(c->buf);
  free(c);
}
