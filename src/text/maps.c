#include "maps.h"

#include <stdlib.h>

#include "fsdp/error.h"

void token_table_init(struct token_table *t, int n) {
  memset(t, 0, sizeof *t);
  t->n = n;
  t->offset = fsdp_xcalloc((size_t)n, sizeof *t->offset);
  t->length = fsdp_xcalloc((size_t)n, sizeof *t->length);
}

void token_table_set(struct token_table *t, int id, const unsigned char *bytes, size_t n) {
  t->pool = fsdp_xgrow(t->pool, &t->pool_cap, t->pool_used + n, 1, 1 << 16);
  memcpy(t->pool + t->pool_used, bytes, n);
  t->offset[id] = t->pool_used;
  t->length[id] = (uint32_t)n;
  t->pool_used += n;
}

void token_table_free(struct token_table *t) {
  free(t->pool);
  free(t->offset);
  free(t->length);
  memset(t, 0, sizeof *t);
}

/* A power of two at least twice entries: probes stay short. */
static size_t table_size(size_t entries) {
  size_t size = 16;
  while (size < 2 * entries) size *= 2;
  return size;
}

void bytes_map_init(struct bytes_map *m, size_t entries) {
  size_t size = table_size(entries);
  m->slots = fsdp_xcalloc(size, sizeof *m->slots);
  m->mask = size - 1;
}

static int same_bytes(const struct token_table *t, uint32_t id, const unsigned char *p, size_t n) {
  return t->length[id] == n && memcmp(token_table_bytes(t, id), p, n) == 0;
}

int bytes_map_add(struct bytes_map *m, const struct token_table *t, uint32_t id) {
  const unsigned char *p = token_table_bytes(t, id);
  size_t n = t->length[id];
  for (size_t i = (size_t)hash_bytes(p, n) & m->mask;; i = (i + 1) & m->mask) {
    if (m->slots[i] == 0) {
      m->slots[i] = id + 1;
      return -1;
    }
    if (same_bytes(t, m->slots[i] - 1, p, n)) return (int)(m->slots[i] - 1);
  }
}

int bytes_map_find(const struct bytes_map *m, const struct token_table *t, const unsigned char *p, size_t n) {
  for (size_t i = (size_t)hash_bytes(p, n) & m->mask;; i = (i + 1) & m->mask) {
    if (m->slots[i] == 0) return -1;
    if (same_bytes(t, m->slots[i] - 1, p, n)) return (int)(m->slots[i] - 1);
  }
}

void bytes_map_free(struct bytes_map *m) {
  free(m->slots);
  m->slots = NULL;
}

void merge_map_init(struct merge_map *m, size_t entries) {
  size_t size = table_size(entries);
  m->slots = fsdp_xmalloc(size * sizeof *m->slots);
  for (size_t i = 0; i < size; i++) m->slots[i].key = MERGE_EMPTY;
  m->mask = size - 1;
}

long merge_map_add(struct merge_map *m, uint32_t left, uint32_t right, uint32_t rank, uint32_t merged) {
  uint64_t key = (uint64_t)left << 32 | right;
  for (size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & m->mask;; i = (i + 1) & m->mask) {
    if (m->slots[i].key == key) return m->slots[i].rank;
    if (m->slots[i].key == MERGE_EMPTY) {
      m->slots[i] = (struct merge){key, rank, merged};
      return -1;
    }
  }
}

void merge_map_free(struct merge_map *m) {
  free(m->slots);
  m->slots = NULL;
}
