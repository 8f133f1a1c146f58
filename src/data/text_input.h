/* Private to src/data: files read as documents, for fsdp tokenize and for --data read
 * through --tokenizer; and the progress line of a long read. */
#ifndef FSDP_DATA_TEXT_INPUT_H
#define FSDP_DATA_TEXT_INPUT_H

#include <stddef.h>

#include "fsdp/data.h"
#include "fsdp/text.h"

/* Where a file's documents go, in order: more text of the current document, its end;
 * and (read, may be NULL) how many bytes of the file were read, for a progress line. */
struct document_sink {
  void (*write)(void *context, const void *text, size_t n);
  void (*end)(void *context);
  void (*read)(void *context, size_t file_bytes);
  void *context;
};

/* The file at path (gzip inflated, byte_source.h) as one document, or one per stretch
 * between separators (sep NULL or empty: the whole file); what names it in messages
 * ("input", "--data"). */
void text_input_read(const char *what, const char *path, const struct text_separator *sep,
                     const struct document_sink *sink);
/* A line on stderr every few seconds while a large input is read: the bytes of the files
 * read, and the tokens made where the caller counts them. */
struct text_progress {
  size_t total, done;
  size_t tokens;
  double start_ms, shown_ms;
  int shown; /* a line was printed */
};

/* text_input_read into a text stream (fsdp/text.h); progress may be NULL. */
void text_input_file(struct text_stream *s, const char *what, const char *path, const struct text_separator *sep,
                     struct text_progress *progress);
/* Counts bytes read and prints the line when it is due (progress->total large enough). */
void text_progress_add(struct text_progress *p, size_t bytes);
/* Ends a line left on a terminal. */
void text_progress_done(struct text_progress *p);

#endif
