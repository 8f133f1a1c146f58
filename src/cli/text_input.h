/* Private to src/cli: text files read into a text stream (fsdp/text.h) as documents, for
 * fsdp tokenize and for --data read through --tokenizer. */
#ifndef FSDP_CLI_TEXT_INPUT_H
#define FSDP_CLI_TEXT_INPUT_H

#include <stddef.h>

#include "fsdp/text.h"

/* Bytes that end a document within a file (and are dropped); none: each file is one. */
struct text_separator {
  const char *bytes;
  size_t n;
};

/* A line on stderr every few seconds while a large input is read. */
struct text_progress {
  size_t total, done;
  double start_ms, shown_ms;
  int shown; /* a line was printed */
};

/* Writes the file at path to s: one document, or one per stretch between separators
 * (sep NULL or empty: the whole file); what names it in messages ("input", "--data"). */
void text_input_file(struct text_stream *s, const char *what, const char *path, const struct text_separator *sep,
                     struct text_progress *progress);
/* Counts bytes read and prints the line when it is due (progress->total large enough). */
void text_progress_add(struct text_progress *p, size_t bytes);
/* Ends a line left on a terminal. */
void text_progress_done(struct text_progress *p);

#endif
