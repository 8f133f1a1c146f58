/* Encoding on several threads, with the ids of one thread. A text is cut into parts,
 * each scanned by a thread from a guessed state: position, and not at a segment's start
 * (scanner.h). The guess is right when the scan of the text before reaches the same
 * state, since a scan goes on alike from equal states. Joining the parts in order, each
 * part's ids are taken from the first state it shares with the scan that got there (it
 * records the states of its first pieces); where it shares none, that stretch is scanned
 * again on the joining thread. Parts start after a newline before a letter, where
 * GPT-2's and Llama 3's patterns always end a piece, so the first guess is almost always
 * right; the ids never depend on it. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "encoder.h"
#include "fsdp/error.h"

enum { DEFAULT_CHUNK_BYTES = 256 << 10 };
/* States a part records, and how far past its guessed start a part looks for a newline. */
enum { PART_MARKS = 256, CUT_SEARCH_BYTES = 4096 };

void token_vec_push(struct token_vec *v, uint32_t id) {
  v->ids = fsdp_xgrow(v->ids, &v->cap, v->n + 1, sizeof *v->ids, 256);
  v->ids[v->n++] = id;
}

void token_vec_append(struct token_vec *v, const uint32_t *ids, size_t n) {
  if (n == 0) return; /* ids may be NULL then */
  v->ids = fsdp_xgrow(v->ids, &v->cap, v->n + n, sizeof *v->ids, 256);
  memcpy(v->ids + v->n, ids, n * sizeof *ids);
  v->n += n;
}

void token_vec_free(struct token_vec *v) {
  free(v->ids);
  memset(v, 0, sizeof *v);
}

struct worker {
  struct scanner scanner;
  struct bpe_work bpe;
};

struct run;

/* Helper threads live as long as their encoder (threads - 1 of them, the calling thread
 * being the first worker): a call hands them its run and waits until each is done with
 * it, so encoding many short texts starts no thread per text. */
struct helper {
  struct text_encoder *e;
  int worker;
  pthread_t id;
};

struct text_encoder {
  const struct text_tokenizer *t;
  int threads;
  size_t chunk_bytes;
  struct worker *workers;
  struct helper *helpers;
  pthread_mutex_t lock;
  pthread_cond_t wake, done;
  struct run *run;          /* the run handed out last */
  unsigned long generation; /* runs handed out */
  int busy;                 /* helpers not yet done with it */
  int closing;
};

static void *helper_main(void *p);

struct text_encoder *text_encoder_create(const struct text_tokenizer *t, int threads, size_t chunk_bytes) {
  FSDP_CHECK(threads >= 1);
  struct text_encoder *e = fsdp_xcalloc(1, sizeof *e);
  e->t = t;
  e->threads = threads;
  e->chunk_bytes = chunk_bytes ? chunk_bytes : DEFAULT_CHUNK_BYTES;
  e->workers = fsdp_xcalloc((size_t)threads, sizeof *e->workers);
  for (int i = 0; i < threads; i++) {
    scanner_init(&e->workers[i].scanner, t);
    bpe_work_init(&e->workers[i].bpe);
  }
  pthread_mutex_init(&e->lock, NULL);
  pthread_cond_init(&e->wake, NULL);
  pthread_cond_init(&e->done, NULL);
  e->helpers = fsdp_xcalloc((size_t)threads, sizeof *e->helpers);
  for (int i = 1; i < threads; i++) {
    e->helpers[i] = (struct helper){e, i, 0};
    if (pthread_create(&e->helpers[i].id, NULL, helper_main, &e->helpers[i]) != 0)
      fsdp_fatal("cannot start a tokenizer thread");
  }
  return e;
}

int text_encoder_threads(const struct text_encoder *e) { return e->threads; }

void text_encoder_free(struct text_encoder *e) {
  if (!e) return;
  pthread_mutex_lock(&e->lock);
  e->closing = 1;
  pthread_cond_broadcast(&e->wake);
  pthread_mutex_unlock(&e->lock);
  for (int i = 1; i < e->threads; i++) pthread_join(e->helpers[i].id, NULL);
  free(e->helpers);
  pthread_mutex_destroy(&e->lock);
  pthread_cond_destroy(&e->wake);
  pthread_cond_destroy(&e->done);
  for (int i = 0; i < e->threads; i++) {
    scanner_free(&e->workers[i].scanner);
    bpe_work_free(&e->workers[i].bpe);
  }
  free(e->workers);
  free(e);
}

/* One piece's ids. */
static void encode_piece(struct worker *w, const struct scanner *s, enum scan_result r, const struct piece *p,
                         struct token_vec *out) {
  if (r == SCAN_ADDED)
    token_vec_push(out, p->id);
  else
    bpe_encode(s->t, &w->bpe, s->text + p->start, p->end - p->start, out);
}

struct mark {
  struct scan_state at;
  size_t ids_before;
};

/* A stretch [from.pos, end) of a span, scanned by one thread: up to the first piece
 * that starts at or after end (the last part of a span: end is SIZE_MAX, to the end of
 * its text or window), or before a piece too long to finish. A span's first part starts
 * where the span does; the others from a guess, and they record their first states in
 * marks. */
struct part {
  struct text_span *span;
  struct scan_state from;
  size_t end;
  struct token_vec ids;
  struct mark *marks; /* PART_MARKS of them, or NULL in a span's first part */
  int n_marks;
  struct scan_state stop;
  enum scan_result stop_reason; /* SCAN_PIECE: reached end; else the scanner's END or NEED_MORE */
};

/* A part reads at most a quarter of a part's length past its end to finish its last
 * piece: a longer piece (a run of a million spaces) is left to the joining thread, to be
 * encoded once rather than by every part it spans. */
static void scan_part(struct worker *w, struct part *part, size_t overrun) {
  struct scanner *s = &w->scanner;
  const struct text_span *span = part->span;
  size_t horizon = span->n;
  if (part->end < span->n && span->n - part->end > overrun) horizon = part->end + overrun;
  scanner_start(s, span->text, horizon, span->final && horizon == span->n, part->from);
  for (;;) {
    if (s->at.pos >= part->end) {
      part->stop_reason = SCAN_PIECE;
      break;
    }
    if (part->marks && part->n_marks < PART_MARKS) part->marks[part->n_marks++] = (struct mark){s->at, part->ids.n};
    struct piece p;
    enum scan_result r = scanner_next(s, &p);
    if (r == SCAN_END || r == SCAN_NEED_MORE || r == SCAN_TOO_LONG) {
      /* Short of the horizon, the part stops early; the joining thread goes on from there. */
      part->stop_reason = r == SCAN_NEED_MORE && horizon < span->n ? SCAN_PIECE : r;
      break;
    }
    encode_piece(w, s, r, &p, &part->ids);
  }
  part->stop = s->at;
}

/* How many of part's ids come before state at, or -1 when part never was in that state
 * (as far as it recorded): marks are in the order of their positions. */
static long ids_before(const struct part *part, struct scan_state at) {
  if (!part->marks) return scan_state_equal(at, part->from) ? 0 : -1;
  int lo = 0, hi = part->n_marks;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (part->marks[mid].at.pos < at.pos)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < part->n_marks && scan_state_equal(part->marks[lo].at, at) ? (long)part->marks[lo].ids_before : -1;
}

/* Joins a span's parts in order, appending its ids to out (see the top of this file). */
static void join_span(struct worker *w, struct part *parts, int n_parts, struct token_vec *out) {
  struct text_span *span = parts[0].span;
  struct scanner *s = &w->scanner;
  struct scan_state at = span->from;
  size_t first_id = out->n;
  enum scan_result stop;
  int scanning = 0; /* s is scanning from `at` on this thread */
  for (int k = 0; k < n_parts; k++) {
    struct part *part = &parts[k];
    for (;;) {
      long skip = ids_before(part, at);
      if (skip >= 0) {
        /* A part may have no ids (and no array): nothing to offset then. */
        if ((size_t)skip < part->ids.n) token_vec_append(out, part->ids.ids + skip, part->ids.n - (size_t)skip);
        at = part->stop;
        scanning = 0;
        stop = part->stop_reason;
        if (stop != SCAN_PIECE) goto done;
        break;
      }
      if (at.pos >= part->end) break;
      if (!scanning) scanner_start(s, span->text, span->n, span->final, at);
      scanning = 1;
      struct piece p;
      stop = scanner_next(s, &p);
      if (stop == SCAN_END || stop == SCAN_NEED_MORE || stop == SCAN_TOO_LONG) goto done;
      encode_piece(w, s, stop, &p, out);
      at = s->at;
    }
  }
  FSDP_CHECK(0); /* the last part goes to the end of the text, where every scan stops */
done:
  span->consumed = at;
  span->too_long = stop == SCAN_TOO_LONG;
  span->n_ids = out->n - first_id;
}

/* Where a part near target starts: after a newline that a letter follows, else at the
 * next character's start; 0 when there is none before limit. */
static size_t cut_near(const unsigned char *text, size_t target, size_t limit) {
  size_t search_end = target + CUT_SEARCH_BYTES < limit ? target + CUT_SEARCH_BYTES : limit;
  for (size_t i = target; i + 1 < search_end; i++) {
    unsigned char c = text[i + 1] | 0x20;
    if (text[i] == '\n' && c >= 'a' && c <= 'z') return i + 1;
  }
  size_t i = target;
  while (i < limit && (text[i] & 0xc0) == 0x80) i++;
  return i < limit ? i : 0;
}

/* Appends span's parts to parts[*n]. */
static void cut_span(const struct text_encoder *e, struct text_span *span, struct part *parts, int *n) {
  size_t length = span->n - span->from.pos;
  size_t k = length / e->chunk_bytes > 0 ? length / e->chunk_bytes : 1;
  parts[(*n)++] = (struct part){.span = span, .from = span->from, .end = SIZE_MAX};
  for (size_t i = 1; i < k; i++) {
    size_t target = span->from.pos + (size_t)((double)length * (double)i / (double)k);
    size_t cut = cut_near(span->text, target, span->n);
    struct part *last = &parts[*n - 1];
    if (cut <= last->from.pos) continue;
    last->end = cut;
    parts[(*n)++] = (struct part){.span = span, .from = {cut, 0}, .end = SIZE_MAX,
                                  .marks = fsdp_xcalloc(PART_MARKS, sizeof(struct mark))};
  }
}

struct run {
  struct text_encoder *e;
  struct part *parts;
  int n_parts;
  atomic_int next;
  atomic_flag refused;
  char refusal[sizeof ((struct fsdp_catch *)0)->message];
};

/* A refusal on any thread (the pattern failing on this text) stops the others taking
 * parts; the calling thread raises it again once every helper is done with the run, so
 * the job ends from one thread with none mid-scan, and a caller's catch point (the fuzz
 * harnesses) takes it. */
static void run_parts(struct run *run, int worker) {
  struct fsdp_catch refused;
  struct fsdp_catch *outer = fsdp_catch_set(NULL);
  if (setjmp(refused.jump) != 0) {
    if (!atomic_flag_test_and_set(&run->refused)) memcpy(run->refusal, refused.message, sizeof run->refusal);
    atomic_store(&run->next, run->n_parts);
    fsdp_catch_set(outer);
    return;
  }
  fsdp_catch_set(&refused);
  size_t overrun = run->e->chunk_bytes / 4 + 16;
  for (int i; (i = atomic_fetch_add(&run->next, 1)) < run->n_parts;)
    scan_part(&run->e->workers[worker], &run->parts[i], overrun);
  fsdp_catch_set(outer);
}

static void *helper_main(void *p) {
  struct helper *h = p;
  struct text_encoder *e = h->e;
  unsigned long seen = 0;
  pthread_mutex_lock(&e->lock);
  for (;;) {
    while (!e->closing && e->generation == seen) pthread_cond_wait(&e->wake, &e->lock);
    if (e->closing) break;
    seen = e->generation;
    struct run *run = e->run;
    pthread_mutex_unlock(&e->lock);
    run_parts(run, h->worker);
    pthread_mutex_lock(&e->lock);
    if (--e->busy == 0) pthread_cond_signal(&e->done);
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

/* Runs run's parts on the calling thread and, where there are several, the helpers. */
static void run_everywhere(struct text_encoder *e, struct run *run) {
  int helping = e->threads > 1 && run->n_parts > 1;
  if (helping) {
    pthread_mutex_lock(&e->lock);
    e->run = run;
    e->generation++;
    e->busy = e->threads - 1;
    pthread_cond_broadcast(&e->wake);
    pthread_mutex_unlock(&e->lock);
  }
  run_parts(run, 0);
  if (helping) {
    pthread_mutex_lock(&e->lock);
    while (e->busy > 0) pthread_cond_wait(&e->done, &e->lock);
    pthread_mutex_unlock(&e->lock);
  }
}

static void free_parts(struct part *parts, int n_parts) {
  for (int i = 0; i < n_parts; i++) {
    token_vec_free(&parts[i].ids);
    free(parts[i].marks);
  }
  free(parts);
}

void text_encode_spans(struct text_encoder *e, struct text_span *spans, int n_spans, struct token_vec *out) {
  int cap = 0;
  for (int i = 0; i < n_spans; i++) cap += (int)((spans[i].n - spans[i].from.pos) / e->chunk_bytes) + 1;
  struct part *parts = fsdp_xcalloc((size_t)cap, sizeof *parts);
  int n_parts = 0;
  int *span_first = fsdp_xcalloc((size_t)n_spans + 1, sizeof *span_first);
  for (int i = 0; i < n_spans; i++) {
    span_first[i] = n_parts;
    cut_span(e, &spans[i], parts, &n_parts);
  }
  span_first[n_spans] = n_parts;

  struct run run = {.e = e, .parts = parts, .n_parts = n_parts, .refused = ATOMIC_FLAG_INIT};
  run_everywhere(e, &run);
  if (atomic_flag_test_and_set(&run.refused)) {
    free_parts(parts, n_parts);
    free(span_first);
    fsdp_fatal("%s", run.refusal);
  }

  for (int i = 0; i < n_spans; i++)
    join_span(&e->workers[0], &parts[span_first[i]], span_first[i + 1] - span_first[i], out);
  free_parts(parts, n_parts);
  free(span_first);
}

void text_encode(struct text_encoder *e, const void *text, size_t n, struct token_vec *out) {
  struct text_span span = {.text = text, .n = n, .final = 1, .from = {0, 1}};
  text_encode_spans(e, &span, 1, out);
  if (span.too_long)
    fsdp_fatal("the text, byte %zu: " TEXT_PIECE_TOO_LONG, span.consumed.pos, TEXT_PIECE_MAX_BYTES >> 20);
}
