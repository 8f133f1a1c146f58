/* Documents encoded as they arrive, a window at a time: the documents written since the
 * last window, the last of them perhaps unfinished. An unfinished one is encoded as far as
 * its text tells (scanner.h) and the rest kept, with the scan's state, for the next
 * window; so the ids are those of the whole text, whatever the windows. */
#include <stdlib.h>
#include <string.h>

#include "encoder.h"
#include "fsdp/error.h"

enum { WINDOW_BYTES_PER_THREAD = 8 << 20, WINDOW_DOCUMENTS = 1 << 16 };

struct document {
  size_t start;  /* in the stream's text */
  int ended;
  int announced; /* its document token went to the sink */
  struct scan_state from;
  /* What a refusal names (text_stream_origin): origin, the document's number there (0: none, offset is in origin's
   * text) or in the stream (no origin), and the offset of the byte at start. */
  const char *origin;
  long number;
  size_t offset;
};

struct text_stream {
  struct text_encoder *encoder;
  size_t window;
  int document_token;
  text_sink_fn *sink;
  void *context;
  unsigned char *text; /* of the window's documents, one after another */
  size_t length, capacity;
  size_t fresh; /* bytes written since the last window was encoded */
  struct document *docs;
  int n_docs;
  size_t docs_capacity;
  long documents; /* started */
  const char *origin; /* text_stream_origin's */
  long origin_document;
  size_t origin_offset;
  struct token_vec ids;
};

struct text_stream *text_stream_create(struct text_encoder *e, size_t window_bytes, int document_token,
                                       text_sink_fn *sink, void *context) {
  struct text_stream *s = fsdp_xcalloc(1, sizeof *s);
  s->encoder = e;
  s->window = window_bytes ? window_bytes : (size_t)WINDOW_BYTES_PER_THREAD * (size_t)text_encoder_threads(e);
  s->document_token = document_token;
  s->sink = sink;
  s->context = context;
  return s;
}

void text_stream_origin(struct text_stream *s, const char *origin, long document, size_t offset) {
  s->origin = origin;
  s->origin_document = document;
  s->origin_offset = offset;
}

static _Noreturn void refuse_piece(const struct document *d, size_t at) {
  int mib = TEXT_PIECE_MAX_BYTES >> 20;
  if (!d->origin) fsdp_fatal("the text's document %ld, byte %zu: " TEXT_PIECE_TOO_LONG, d->number, d->offset + at, mib);
  if (d->number == 0) fsdp_fatal("%s, byte %zu of its text: " TEXT_PIECE_TOO_LONG, d->origin, d->offset + at, mib);
  fsdp_fatal("%s, document %ld, byte %zu of its text: " TEXT_PIECE_TOO_LONG, d->origin, d->number, d->offset + at, mib);
}

/* Encodes the window's documents and hands their ids to the sink. */
static void encode_window(struct text_stream *s) {
  if (s->n_docs == 0) return;
  struct text_span *spans = fsdp_xcalloc((size_t)s->n_docs, sizeof *spans);
  for (int i = 0; i < s->n_docs; i++) {
    size_t end = i + 1 < s->n_docs ? s->docs[i + 1].start : s->length;
    spans[i] = (struct text_span){.text = s->text + s->docs[i].start, .n = end - s->docs[i].start,
                                  .final = s->docs[i].ended, .from = s->docs[i].from};
  }
  s->ids.n = 0;
  text_encode_spans(s->encoder, spans, s->n_docs, &s->ids);
  for (int i = 0; i < s->n_docs; i++)
    if (spans[i].too_long) refuse_piece(&s->docs[i], spans[i].consumed.pos);
  size_t offset = 0;
  for (int i = 0; i < s->n_docs; i++) {
    if (!s->docs[i].announced && s->document_token >= 0) {
      uint32_t token = (uint32_t)s->document_token;
      s->sink(s->context, &token, 1);
    }
    s->docs[i].announced = 1;
    if (spans[i].n_ids) s->sink(s->context, s->ids.ids + offset, spans[i].n_ids);
    offset += spans[i].n_ids;
  }
  /* What an unfinished last document did not use moves to the front. */
  struct document *last = &s->docs[s->n_docs - 1];
  if (last->ended) {
    s->n_docs = 0;
    s->length = 0;
  } else {
    struct scan_state consumed = spans[s->n_docs - 1].consumed;
    /* A piece longer than the window: a larger one, so that the text is not scanned
     * again and again. */
    if (consumed.pos == 0) s->window *= 2;
    size_t keep_from = last->start + consumed.pos;
    memmove(s->text, s->text + keep_from, s->length - keep_from);
    s->length -= keep_from;
    s->docs[0] = (struct document){0, 0, 1, {0, consumed.segment_start}, last->origin, last->number,
                                   last->offset + consumed.pos};
    s->n_docs = 1;
  }
  s->fresh = 0;
  free(spans);
}

void text_stream_write(struct text_stream *s, const void *text, size_t n) {
  if (n == 0) return;
  if (s->n_docs == 0 || s->docs[s->n_docs - 1].ended) {
    s->docs = fsdp_xgrow(s->docs, &s->docs_capacity, (size_t)s->n_docs + 1, sizeof *s->docs, 64);
    s->documents++;
    s->docs[s->n_docs++] = (struct document){s->length, 0, 0, {0, 1}, s->origin,
                                             s->origin ? s->origin_document : s->documents, s->origin_offset};
  }
  s->text = fsdp_xgrow(s->text, &s->capacity, s->length + n, 1, 1 << 16);
  memcpy(s->text + s->length, text, n);
  s->length += n;
  s->fresh += n;
  if (s->fresh >= s->window) encode_window(s);
}

void text_stream_end_document(struct text_stream *s) {
  if (s->n_docs == 0 || s->docs[s->n_docs - 1].ended) return;
  s->docs[s->n_docs - 1].ended = 1;
  if (s->n_docs >= WINDOW_DOCUMENTS) encode_window(s);
}

void text_stream_finish(struct text_stream *s) {
  text_stream_end_document(s);
  encode_window(s);
  free(s->text);
  free(s->docs);
  token_vec_free(&s->ids);
  free(s);
}
