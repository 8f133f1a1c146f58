/* Private to src/text: cutting text into pieces, as Hugging Face's pre-tokenization does.
 * Added tokens first: the leftmost occurrence of any, the longest there, is a piece of
 * its own. The text between them (a segment) is cut by the pattern: each match is a
 * piece, and so are the bytes between matches (invalid UTF-8, which the pattern never
 * matches, or what the pattern leaves out).
 *
 * Where the next piece starts and what it is depends only on the scanner's state there,
 * (position, whether it starts a segment), and on the text from that position on: each
 * match is searched from the piece's own start. So two scans of the same text that reach
 * the same state go on alike, which is what lets threads start mid-text (encode.c).
 *
 * A window that is not the end of its text may be too short to tell what the next piece
 * is (a match reaching its end, an added token cut by it): the scan then stops, asking for
 * more text, and carries on from that state once there is more. */
#ifndef FSDP_TEXT_SCANNER_H
#define FSDP_TEXT_SCANNER_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

struct scan_state {
  size_t pos;        /* the next piece's first byte */
  int segment_start; /* at the start of the text or right after an added token: where ^ matches */
};

static inline int scan_state_equal(struct scan_state a, struct scan_state b) {
  return a.pos == b.pos && a.segment_start == b.segment_start;
}

enum scan_result {
  SCAN_PIECE,     /* text to merge */
  SCAN_ADDED,     /* an added token */
  SCAN_NEED_MORE, /* the window ends before the next piece is known */
  SCAN_END,       /* the text is done */
  SCAN_TOO_LONG,  /* the next piece, from *p's start (where the scan stays), has more than TEXT_PIECE_MAX_BYTES: the
                   * scan goes no further */
};

struct piece {
  size_t start, end;
  uint32_t id; /* of an added token */
};

struct scanner {
  const struct text_tokenizer *t;
  const unsigned char *text;
  size_t n;
  int final; /* text[n] is the end of the text, not of a window */
  struct scan_state at;
  /* The segment the scan is in: no added token starts in [at.pos, searched_to); one,
   * `added`, starts at searched_to when has_added. Found as far as the scan needs
   * (valid while segment_valid, reset after each added token). */
  int segment_valid, has_added;
  size_t searched_to;
  uint32_t added;
  /* A match found after bytes it did not cover: the piece after those bytes. */
  int pending;
  size_t pending_end;
  pcre2_match_data *match;
  pcre2_match_context *context;
  pcre2_jit_stack *stack;
};

void scanner_init(struct scanner *s, const struct text_tokenizer *t);
void scanner_free(struct scanner *s);
/* Scans text[at.pos, n) from state at. */
void scanner_start(struct scanner *s, const unsigned char *text, size_t n, int final, struct scan_state at);
/* The next piece, into *p, and s->at moved past it; or why there is none. */
enum scan_result scanner_next(struct scanner *s, struct piece *p);

#endif
