/* Private to src/text: encoding several texts at once, any of them a window of a longer
 * text that goes on in a later call (stream.c). */
#ifndef FSDP_TEXT_ENCODER_H
#define FSDP_TEXT_ENCODER_H

#include "fsdp/text.h"
#include "scanner.h"

struct text_span {
  const unsigned char *text;
  size_t n;
  int final;                  /* text[n] ends the text; else only this window */
  struct scan_state from;     /* where the scan starts */
  struct scan_state consumed; /* set: where the scan stopped (n when final) */
  size_t n_ids;               /* set: how many ids it appended */
  int too_long;               /* set: it stopped before a piece of more than TEXT_PIECE_MAX_BYTES, at consumed */
};

/* A refusal of a piece too long, after "<where it starts>: ". */
#define TEXT_PIECE_TOO_LONG                                                                                          \
  "a pre-token of more than %d MiB starts there (a stretch that the tokenizer's pattern does not cut, as one word, " \
  "or one run of spaces or of symbols): the tokenizer encodes at most that much at once, which bounds its memory; " \
  "cut or remove that stretch"

int text_encoder_threads(const struct text_encoder *e);

/* Appends every span's ids to out, span after span, all their parts encoded on the
 * encoder's threads. */
void text_encode_spans(struct text_encoder *e, struct text_span *spans, int n_spans, struct token_vec *out);

#endif
