#include "text_input.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "byte_source.h"
#include "fsdp/error.h"
#include "fsdp/timer.h"

enum { BLOCK_BYTES = 1 << 20 };
enum { PROGRESS_MIN_BYTES = 64 << 20, PROGRESS_EVERY_MS = 2000 };

/* The first occurrence of sep in p[0, n), or NULL. */
static const char *find_separator(const char *p, size_t n, const struct text_separator *sep) {
  for (const char *end = p + n; (size_t)(end - p) >= sep->n; p++) {
    p = memchr(p, sep->bytes[0], (size_t)(end - p) - sep->n + 1);
    if (!p) return NULL;
    if (memcmp(p, sep->bytes, sep->n) == 0) return p;
  }
  return NULL;
}

/* What text_input_read holds, on the heap so that its catch point can free it. */
struct reading {
  struct byte_source src;
  int open;
  char *buf;
};

void text_input_read(const char *what, const char *path, const struct text_separator *sep,
                     const struct document_sink *sink) {
  struct reading *r = fsdp_xcalloc(1, sizeof *r);
  /* A failure (the file, its gzip data, a receiver stopping) frees what is held and goes
   * on to the caller's catch point, or ends the job where there is none. */
  struct fsdp_catch failed;
  struct fsdp_catch *outer = fsdp_catch_set(&failed);
  if (setjmp(failed.jump) != 0) {
    if (r->open) byte_source_close(&r->src);
    free(r->buf);
    free(r);
    fsdp_catch_set(outer);
    fsdp_fatal("%s", failed.message);
  }
  byte_source_open(&r->src, what, path);
  r->open = 1;
  int splitting = sep && sep->n > 0;
  /* A separator cut by a block's end is found in the next: its first n - 1 bytes wait there. */
  size_t keep = splitting ? sep->n - 1 : 0, carried = 0;
  char *buf = r->buf = fsdp_xmalloc(BLOCK_BYTES + keep);
  for (;;) {
    size_t file_bytes, n = byte_source_read(&r->src, buf + carried, BLOCK_BYTES, &file_bytes);
    if (sink->read) sink->read(sink->context, file_bytes);
    size_t avail = carried + n, start = 0;
    for (const char *hit; splitting && (hit = find_separator(buf + start, avail - start, sep));) {
      sink->write(sink->context, buf + start, (size_t)(hit - buf) - start);
      sink->end(sink->context);
      start = (size_t)(hit - buf) + sep->n;
    }
    if (n == 0) { /* the end: what is carried cannot start a separator any more */
      sink->write(sink->context, buf + start, avail - start);
      break;
    }
    size_t stop = avail - start > keep ? avail - keep : start;
    sink->write(sink->context, buf + start, stop - start);
    memmove(buf, buf + stop, avail - stop);
    carried = avail - stop;
  }
  sink->end(sink->context);
  fsdp_catch_set(outer);
  byte_source_close(&r->src);
  free(r->buf);
  free(r);
}

struct stream_sink {
  struct text_stream *stream;
  struct text_progress *progress;
};

static void stream_write(void *context, const void *text, size_t n) {
  text_stream_write(((struct stream_sink *)context)->stream, text, n);
}

static void stream_end(void *context) { text_stream_end_document(((struct stream_sink *)context)->stream); }

static void stream_read(void *context, size_t file_bytes) {
  struct stream_sink *s = context;
  if (s->progress) text_progress_add(s->progress, file_bytes);
}

void text_input_file(struct text_stream *s, const char *what, const char *path, const struct text_separator *sep,
                     struct text_progress *progress) {
  struct stream_sink context = {s, progress};
  struct document_sink sink = {stream_write, stream_end, stream_read, &context};
  text_input_read(what, path, sep, &sink);
}

void text_progress_add(struct text_progress *p, size_t bytes) {
  double now = time_now_ms();
  if (p->start_ms == 0) p->start_ms = p->shown_ms = now;
  p->done += bytes;
  if (p->total < PROGRESS_MIN_BYTES || now - p->shown_ms < PROGRESS_EVERY_MS) return;
  p->shown_ms = now;
  int tty = isatty(STDERR_FILENO);
  double seconds = (now - p->start_ms) / 1000.0;
  char tokens[96] = "";
  if (p->tokens)
    snprintf(tokens, sizeof tokens, ", %.1fM tokens (%.2fM tokens/s)", (double)p->tokens / 1e6,
             seconds > 0 ? (double)p->tokens / 1e6 / seconds : 0.0);
  fprintf(stderr, "%stokenize: %.0f of %.0f MB read (%.0f%%), %.1f MB/s%s%s", tty ? "\r" : "", (double)p->done / 1e6,
          (double)p->total / 1e6, 100.0 * (double)p->done / (double)p->total,
          seconds > 0 ? (double)p->done / 1e6 / seconds : 0.0, tokens, tty ? "\033[K" : "\n");
  fflush(stderr);
  p->shown = 1;
}

void text_progress_done(struct text_progress *p) {
  if (p->shown && isatty(STDERR_FILENO)) fputc('\n', stderr);
}
