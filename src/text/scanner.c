#include "scanner.h"

#include <string.h>

#include "fsdp/error.h"

/* The JIT's stack: matches of long runs (a megabyte of spaces) need more than its default 32 KiB. */
enum { JIT_STACK_START = 32 << 10, JIT_STACK_MAX = 64 << 20 };

void scanner_init(struct scanner *s, const struct text_tokenizer *t) {
  memset(s, 0, sizeof *s);
  s->t = t;
  s->match = pcre2_match_data_create_from_pattern(t->pattern, NULL);
  s->context = pcre2_match_context_create(NULL);
  s->stack = pcre2_jit_stack_create(JIT_STACK_START, JIT_STACK_MAX, NULL);
  if (!s->match || !s->context || !s->stack) fsdp_fatal("out of memory for the tokenizer's pattern");
  pcre2_jit_stack_assign(s->context, NULL, s->stack);
}

void scanner_free(struct scanner *s) {
  pcre2_match_data_free(s->match);
  pcre2_match_context_free(s->context);
  pcre2_jit_stack_free(s->stack);
}

void scanner_start(struct scanner *s, const unsigned char *text, size_t n, int final, struct scan_state at) {
  s->text = text;
  s->n = n;
  s->final = final;
  s->at = at;
  s->segment_valid = 0;
  s->pending = 0;
}

/* The first of ids[lo, hi) whose byte at d is above byte, or at least byte where at_least:
 * each of them has more than d bytes, and they are in the order of their bytes. */
static int bound(const struct token_table *tokens, const uint32_t *ids, int lo, int hi, size_t d, unsigned char byte,
                 int at_least) {
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    unsigned char b = token_table_bytes(tokens, ids[mid])[d];
    if (b < byte || (b == byte && !at_least)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The longest added token at pos, or -1. ids[lo, hi) are those that begin with the text's
 * next d bytes; the one of d bytes, if any, is first. */
static long added_at(const struct scanner *s, size_t pos) {
  const struct added_tokens *a = &s->t->added;
  const struct token_table *tokens = &s->t->tokens;
  const unsigned char *text = s->text + pos;
  long longest = -1;
  int lo = a->first[text[0]], hi = a->first[text[0] + 1];
  for (size_t d = 1; lo < hi; d++) {
    if (tokens->length[a->ids[lo]] == d) longest = a->ids[lo];
    while (lo < hi && tokens->length[a->ids[lo]] == d) lo++;
    if (d == s->n - pos) break;
    lo = bound(tokens, a->ids, lo, hi, d, text[d], 1);
    hi = bound(tokens, a->ids, lo, hi, d, text[d], 0);
  }
  return longest;
}

/* Added tokens are looked for only where the window holds all of the longest one's
 * bytes: closer to the end of a window, what comes next is not known yet. */
static size_t search_limit(const struct scanner *s) {
  size_t longest = s->t->added.max_length;
  if (s->final || longest == 0) return s->n;
  return s->n >= longest ? s->n - longest + 1 : 0;
}

/* Looks for the segment's end further on: at least SEARCH_STEP bytes past the scan, and
 * twice as far as before, so that the text is searched once and a piece is matched again
 * only once in every so many bytes. */
enum { SEARCH_STEP = 4096 };
static void search_further(struct scanner *s, size_t limit) {
  if (s->t->added.n == 0) {
    s->searched_to = limit;
    return;
  }
  size_t pos = s->at.pos, ahead = s->searched_to > pos ? s->searched_to - pos : 0;
  size_t target = pos + 2 * (ahead > SEARCH_STEP ? ahead : SEARCH_STEP);
  if (target > limit || target < pos) target = limit;
  size_t p = s->searched_to > pos ? s->searched_to : pos;
  for (; p < target; p++) {
    long id = added_at(s, p);
    if (id >= 0) {
      s->has_added = 1;
      s->added = (uint32_t)id;
      break;
    }
  }
  s->searched_to = p;
}

/* An end that is not the segment's is moved back before a UTF-8 sequence that it cuts:
 * the pattern would take the cut sequence for invalid bytes (which \S does not match,
 * so "  " before a cut letter would end a match there without reaching the end). */
static size_t whole_characters_end(const unsigned char *text, size_t start, size_t end) {
  for (size_t back = 1; back <= 3 && back <= end - start; back++) {
    unsigned char b = text[end - back];
    if ((b & 0xc0) == 0x80) continue; /* a continuation byte: its lead is further back */
    size_t length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return length > back ? end - back : end;
  }
  return end;
}

static enum scan_result emit(struct scanner *s, struct piece *p, size_t end, enum scan_result kind) {
  p->start = s->at.pos;
  p->end = end;
  if (kind == SCAN_PIECE && end - s->at.pos > TEXT_PIECE_MAX_BYTES) return SCAN_TOO_LONG;
  s->at = (struct scan_state){end, kind == SCAN_ADDED};
  if (kind == SCAN_ADDED) s->segment_valid = 0;
  return kind;
}

enum scan_result scanner_next(struct scanner *s, struct piece *p) {
  if (s->pending) {
    s->pending = 0;
    return emit(s, p, s->pending_end, SCAN_PIECE);
  }
  size_t pos = s->at.pos, limit = search_limit(s);
  if (pos == s->n) return s->final ? SCAN_END : SCAN_NEED_MORE;
  if (!s->segment_valid) {
    s->segment_valid = 1;
    s->has_added = 0;
    s->searched_to = pos;
  }
  for (;;) {
    if (s->has_added && pos == s->searched_to) {
      p->id = s->added;
      return emit(s, p, pos + s->t->tokens.length[s->added], SCAN_ADDED);
    }
    /* The segment ends at searched_to when an added token starts there, or at the end
     * of a final text; else it may go on past searched_to. */
    int searched_all = !s->has_added && s->searched_to >= limit;
    int end_known = s->has_added || (searched_all && s->final);
    size_t end = s->searched_to > pos ? s->searched_to : pos;
    if (!end_known) end = whole_characters_end(s->text, pos, end);
    int rc = PCRE2_ERROR_NOMATCH;
    if (end > pos) {
      /* ^ matches at a segment's start only; a match that reaches an end that is not the
       * segment's may be another with more text. */
      uint32_t options = (s->at.segment_start ? 0 : PCRE2_NOTBOL) | (end_known ? 0 : PCRE2_PARTIAL_HARD);
      rc = pcre2_match(s->t->pattern, s->text + pos, end - pos, 0, options, s->match, s->context);
    }
    if (rc == PCRE2_ERROR_PARTIAL || (rc == PCRE2_ERROR_NOMATCH && !end_known)) {
      if (searched_all) { /* the window ends too soon; a piece this long already is refused, not waited for */
        if (end - pos <= TEXT_PIECE_MAX_BYTES) return SCAN_NEED_MORE;
        p->start = pos;
        p->end = end;
        return SCAN_TOO_LONG;
      }
      search_further(s, limit);
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) return emit(s, p, end, SCAN_PIECE);
    if (rc < 0) {
      PCRE2_UCHAR why[256];
      pcre2_get_error_message(rc, why, sizeof why);
      fsdp_fatal("%s: the pre-tokenizer's pattern failed on the text: %s", s->t->name, why);
    }
    const PCRE2_SIZE *range = pcre2_get_ovector_pointer(s->match);
    /* The load refuses a pattern PCRE2 says can match nothing, but PCRE2's bound counts a
     * lookahead's characters ((?=d) has a minimum length of 1): an empty match, met here,
     * would never move on. */
    if (range[0] == range[1])
      fsdp_fatal("%s: the pre-tokenizer's pattern matched the empty string in the text (a lookahead alone?): "
                 "a pattern that can match nothing is not supported",
                 s->t->name);
    if (range[0] > 0) { /* bytes before the match: a piece of their own, then the match */
      s->pending = 1;
      s->pending_end = pos + range[1];
      return emit(s, p, pos + range[0], SCAN_PIECE);
    }
    return emit(s, p, pos + range[1], SCAN_PIECE);
  }
}
