/* Text to token ids and back with a Hugging Face tokenizer.json byte-level BPE (GPT-2's
 * and Llama 3's kind): added tokens split out first, the pre-tokenizer's pattern (PCRE2)
 * cutting the rest into pieces, each piece's bytes merged by rank. Encoding runs on
 * several threads and gives the same ids whatever their number (docs/architecture.md,
 * "Text"). decode(encode(x)) == x for every byte string x, invalid UTF-8 included. */
#ifndef FSDP_TEXT_H
#define FSDP_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct text_tokenizer;

/* Reads a tokenizer.json; anything it cannot encode exactly as Hugging Face's tokenizers
 * would ends the job with "<what> '<path>': <the problem>". */
struct text_tokenizer *text_tokenizer_load(const char *what, const char *path);
void text_tokenizer_free(struct text_tokenizer *t);
/* Ids run from 0 to this - 1, each with its bytes. */
int text_tokenizer_vocab_size(const struct text_tokenizer *t);
/* Token id's bytes (*length of them, not terminated); id must be below the vocab size. */
const unsigned char *text_tokenizer_bytes(const struct text_tokenizer *t, int id, size_t *length);
/* The id of the added token whose content is text, or -1. */
int text_tokenizer_added(const struct text_tokenizer *t, const char *text);
/* The token put before every document: <|begin_of_text|> (Llama 3) where the tokenizer
 * has it, else <|endoftext|> (GPT-2); -1 when it has neither. */
int text_tokenizer_document_token(const struct text_tokenizer *t);

/* A growing array of token ids. */
struct token_vec {
  uint32_t *ids;
  size_t n, cap;
};
void token_vec_push(struct token_vec *v, uint32_t id);
void token_vec_append(struct token_vec *v, const uint32_t *ids, size_t n);
void token_vec_free(struct token_vec *v);

/* The longest pre-token (a piece the pattern cuts, or bytes between added tokens and
 * matches) encoded: merging a piece takes about 75 bytes of memory a byte, so a longer
 * one (a run of one letter, of spaces: data that is not text, a gzip bomb) is refused,
 * naming where it starts, rather than let one input take any amount of memory. Hugging
 * Face's tokenizers has no such limit; no text in a human language comes near it. */
enum { TEXT_PIECE_MAX_BYTES = 1 << 20 };

/* Encodes with `threads` threads (at least 1), cutting a text into parts of at least
 * chunk_bytes for them (0: a default of 256 KiB; tests make it small to cut often). */
struct text_encoder *text_encoder_create(const struct text_tokenizer *t, int threads, size_t chunk_bytes);
void text_encoder_free(struct text_encoder *e);
/* Appends the ids of text[0, n) to out. A pre-token longer than TEXT_PIECE_MAX_BYTES ends
 * the job naming its first byte. */
void text_encode(struct text_encoder *e, const void *text, size_t n, struct token_vec *out);

/* Documents encoded as they are written, in windows of about window_bytes (0: 8 MiB per
 * thread) that hold many documents or a part of one, and handed to sink in order: for
 * each document with any text, document_token (unless it is -1), then its ids. The ids do
 * not depend on the window size or the threads. */
typedef void text_sink_fn(void *context, const uint32_t *ids, size_t n);
struct text_stream *text_stream_create(struct text_encoder *e, size_t window_bytes, int document_token,
                                       text_sink_fn *sink, void *context);
/* More text of the current document. A pre-token longer than TEXT_PIECE_MAX_BYTES ends
 * the job naming the document and its first byte, as text_stream_origin says. */
void text_stream_write(struct text_stream *s, const void *text, size_t n);
/* Where the documents written from now on come from, for that refusal to name: origin
 * ("input 'a.txt'"; kept, not copied), and the offset there of the next byte written: in
 * origin's text when document is 0, else in the text of origin's document'th document
 * (a JSON string). Read where a write starts a document, whose bytes then count on from
 * there. Without it, a document is named by its number in the stream. */
void text_stream_origin(struct text_stream *s, const char *origin, long document, size_t offset);
/* Ends the current document: the next write starts another. */
void text_stream_end_document(struct text_stream *s);
/* Ends the last document, hands everything left to the sink, and frees the stream. */
void text_stream_finish(struct text_stream *s);

/* fsdp sample's --tokenizer, of either kind, told apart by its content (tokenizer_file.c):
 * a Hugging Face tokenizer.json (a JSON object; encodes and decodes) or llm.c's
 * gpt2_tokenizer.bin (magic 20240328; decodes only). */
struct tokenizer_file {
  struct text_tokenizer *json;  /* or NULL: */
  struct llmc_tokenizer *llmc;
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
