#include "text_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsdp/error.h"
#include "fsdp/input_file.h"
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

void text_input_file(struct text_stream *s, const char *what, const char *path, const struct text_separator *sep,
                     struct text_progress *progress) {
  struct input_file f;
  input_file_open(&f, what, path);
  int splitting = sep && sep->n > 0;
  /* A separator cut by a block's end is found in the next: its first n - 1 bytes wait there. */
  size_t keep = splitting ? sep->n - 1 : 0, carried = 0;
  char *buf = fsdp_xmalloc(BLOCK_BYTES + keep);
  for (size_t offset = 0; offset < f.size;) {
    size_t n = f.size - offset < BLOCK_BYTES ? f.size - offset : BLOCK_BYTES;
    input_file_read_at(&f, what, buf + carried, n, offset);
    offset += n;
    if (progress) text_progress_add(progress, n);
    size_t avail = carried + n, start = 0;
    for (const char *hit; splitting && (hit = find_separator(buf + start, avail - start, sep));) {
      text_stream_write(s, buf + start, (size_t)(hit - buf) - start);
      text_stream_end_document(s);
      start = (size_t)(hit - buf) + sep->n;
    }
    size_t stop = avail;
    if (offset < f.size) stop = avail - start > keep ? avail - keep : start;
    text_stream_write(s, buf + start, stop - start);
    memmove(buf, buf + stop, avail - stop);
    carried = avail - stop;
  }
  text_stream_end_document(s);
  input_file_close(&f);
  free(buf);
}

void text_progress_add(struct text_progress *p, size_t bytes) {
  double now = time_now_ms();
  if (p->done == 0) p->start_ms = p->shown_ms = now;
  p->done += bytes;
  if (p->total < PROGRESS_MIN_BYTES || now - p->shown_ms < PROGRESS_EVERY_MS) return;
  p->shown_ms = now;
  int tty = isatty(STDERR_FILENO);
  double seconds = (now - p->start_ms) / 1000.0;
  fprintf(stderr, "%stokenize: %.0f of %.0f MB read (%.0f%%), %.1f MB/s%s", tty ? "\r" : "", (double)p->done / 1e6,
          (double)p->total / 1e6, 100.0 * (double)p->done / (double)p->total,
          seconds > 0 ? (double)p->done / 1e6 / seconds : 0.0, tty ? "" : "\n");
  fflush(stderr);
  p->shown = 1;
}

void text_progress_done(struct text_progress *p) {
  if (p->shown && isatty(STDERR_FILENO)) fputc('\n', stderr);
}
