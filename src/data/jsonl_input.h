/* Private to src/data: JSON Lines files as documents, for fsdp tokenize: each line an
 * object whose member key is a document's text, as FineWeb's, OpenWebText's and most data
 * sets' JSONL files hold them. A file is cut into chunks of whole lines on one thread (it
 * may be gzip, which only inflates in order) and the chunks parsed on others. */
#ifndef FSDP_DATA_JSONL_INPUT_H
#define FSDP_DATA_JSONL_INPUT_H

#include <stddef.h>

#include "text_input.h"

/* Receives a chunk: lines[0, n) (malloc'd, the receiver's to free), whole lines but
 * perhaps the file's last, the first of them the file's line first_line (from 1);
 * file_bytes: bytes of the file read for it. */
typedef void jsonl_chunk_fn(void *context, char *lines, size_t n, long first_line, size_t file_bytes);

/* The file at path (gzip inflated) in chunks of about chunk_bytes; what names it in
 * messages ("input"). A line longer than 256 MiB ends the job. */
void jsonl_input_chunks(const char *what, const char *path, size_t chunk_bytes, jsonl_chunk_fn *fn, void *context);

/* A chunk's lines as documents: each line's member key, a string, is one. A line that is
 * not (not JSON, not an object, no such member, not a string, or a string with a NUL)
 * ends the job naming the file and the line: a download cut short or a wrong key is
 * found, not trained around. Blank lines are skipped, and a UTF-8 byte order mark
 * before the file's first. */
void jsonl_input_lines(const char *what, const char *path, const char *key, const char *lines, size_t n,
                       long first_line, const struct document_sink *sink);

#endif
