/* Private to src/data: fsdp tokenize's input files read on threads of their own (text
 * files, or JSON Lines with a key; gzip inflated), so that reading, inflating and parsing
 * run while the encoder's threads encode what came before. One thread reads the files in
 * order and cuts JSONL into chunks of whole lines; several parse the chunks (cJSON costs
 * about a tenth of encoding, so one parser would hold back more than a dozen encoding
 * threads); the blocks of documents come out in the files' order. */
#ifndef FSDP_DATA_DOCUMENT_READER_H
#define FSDP_DATA_DOCUMENT_READER_H

#include <stddef.h>

#include "text_input.h"

/* A stretch of documents: text[0, n) cut into pieces, each the next bytes of the current
 * document, some ending it. A document may go on over several blocks. */
struct document_block {
  char *text;
  size_t n, cap;
  struct document_piece {
    size_t n;
    int ends; /* the document ends after this piece */
  } *pieces;
  size_t n_pieces, pieces_cap;
  size_t file_bytes; /* of the files, read for this block (a progress line's) */
  char *failure;     /* what stopped the reading here, raised when the block's turn comes */
};

struct document_files {
  char *const *paths;
  int n;
  const char *jsonl_key;            /* NULL: text files */
  const struct text_separator *sep; /* text files: documents within a file */
};

struct document_reader;

/* Starts reading files on 1 + parsers threads, up to about ahead_bytes ahead of the
 * consumer. */
struct document_reader *document_reader_start(const struct document_files *files, int parsers, size_t ahead_bytes);
/* The next block (the caller frees it), or NULL after the last. A failure reading (a
 * file, a line of JSON) ends the job here, on the caller's thread, in the files' order:
 * the first bad line is the one named. */
struct document_block *document_reader_next(struct document_reader *r);
void document_block_free(struct document_block *b);
/* Stops and joins the reading threads (a job ending on an error elsewhere: no thread is
 * left behind mid-read). */
void document_reader_stop(struct document_reader *r);
/* Waits for the threads (after the last block) and frees the reader. */
void document_reader_finish(struct document_reader *r);

#endif
