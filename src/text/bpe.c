#include "bpe.h"

#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"

/* A token of the piece being merged, in a list: prev and next are indices, -1 at the
 * ends. A symbol merged into its left neighbour is DEAD. */
struct bpe_symbol {
  uint32_t id;
  long prev, next;
};
#define DEAD UINT32_MAX

/* A merge that was possible when found: left and right were the ids at pos and after
 * it. Taken in the order (rank, pos); one whose ids have changed since is skipped. */
struct bpe_candidate {
  uint32_t rank, left, right, merged;
  size_t pos;
};

void bpe_work_init(struct bpe_work *w) {
  memset(w, 0, sizeof *w);
  w->cache = fsdp_xcalloc(PIECE_CACHE_SLOTS, sizeof *w->cache);
}

void bpe_work_free(struct bpe_work *w) {
  free(w->symbols);
  free(w->heap);
  free(w->cache);
}

static int before(const struct bpe_candidate *a, const struct bpe_candidate *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(struct bpe_candidate *heap, size_t *n, struct bpe_candidate c) {
  size_t i = (*n)++;
  for (; i > 0 && before(&c, &heap[(i - 1) / 2]); i = (i - 1) / 2) heap[i] = heap[(i - 1) / 2];
  heap[i] = c;
}

static struct bpe_candidate heap_pop(struct bpe_candidate *heap, size_t *n) {
  struct bpe_candidate top = heap[0], last = heap[--*n];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= *n) break;
    if (child + 1 < *n && before(&heap[child + 1], &heap[child])) child++;
    if (!before(&heap[child], &last)) break;
    heap[i] = heap[child];
    i = child;
  }
  if (*n > 0) heap[i] = last;
  return top;
}

/* The merge of the symbol at pos with the next, when the tokenizer has one. */
static void push_pair(const struct text_tokenizer *t, struct bpe_work *w, size_t *heap_n, long pos) {
  if (pos < 0 || w->symbols[pos].next < 0) return;
  uint32_t left = w->symbols[pos].id, right = w->symbols[w->symbols[pos].next].id;
  const struct merge *m = merge_map_find(&t->merges, left, right);
  if (m) heap_push(w->heap, heap_n, (struct bpe_candidate){m->rank, left, right, m->merged, (size_t)pos});
}

static void merge_bytes(const struct text_tokenizer *t, struct bpe_work *w, const unsigned char *p, size_t n,
                        struct token_vec *out) {
  /* At most n - 1 pairs at first and two more per merge. */
  if (n > w->capacity) {
    w->capacity = n;
    w->symbols = fsdp_xrealloc(w->symbols, n * sizeof *w->symbols);
    w->heap = fsdp_xrealloc(w->heap, 3 * n * sizeof *w->heap);
  }
  struct bpe_symbol *s = w->symbols;
  for (size_t i = 0; i < n; i++)
    s[i] = (struct bpe_symbol){t->byte_token[p[i]], (long)i - 1, i + 1 < n ? (long)i + 1 : -1};
  size_t heap_n = 0;
  for (size_t i = 0; i + 1 < n; i++) push_pair(t, w, &heap_n, (long)i);
  while (heap_n > 0) {
    struct bpe_candidate c = heap_pop(w->heap, &heap_n);
    long next = s[c.pos].next;
    if (s[c.pos].id != c.left || next < 0 || s[next].id != c.right) continue;
    s[c.pos].id = c.merged;
    s[next].id = DEAD;
    s[c.pos].next = s[next].next;
    if (s[next].next >= 0) s[s[next].next].prev = (long)c.pos;
    push_pair(t, w, &heap_n, s[c.pos].prev);
    push_pair(t, w, &heap_n, (long)c.pos);
  }
  for (long i = 0; i >= 0; i = s[i].next) token_vec_push(out, s[i].id);
}

void bpe_encode(const struct text_tokenizer *t, struct bpe_work *w, const unsigned char *p, size_t n,
                struct token_vec *out) {
  struct cached_piece *slot = NULL;
  if (n <= CACHED_PIECE_BYTES) {
    slot = &w->cache[hash_bytes(p, n) & (PIECE_CACHE_SLOTS - 1)];
    if (slot->length == n && memcmp(slot->bytes, p, n) == 0) {
      token_vec_append(out, slot->ids, slot->n_ids);
      return;
    }
  }
  size_t first = out->n;
  int whole = t->ignore_merges ? bytes_map_find(&t->vocab, &t->tokens, p, n) : -1;
  if (whole >= 0)
    token_vec_push(out, (uint32_t)whole);
  else
    merge_bytes(t, w, p, n, out);
  size_t n_ids = out->n - first;
  if (slot && n_ids <= CACHED_PIECE_IDS) {
    slot->length = (uint8_t)n;
    slot->n_ids = (uint8_t)n_ids;
    memcpy(slot->bytes, p, n);
    memcpy(slot->ids, out->ids + first, n_ids * sizeof *out->ids);
  }
}
