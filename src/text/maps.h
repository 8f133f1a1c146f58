/* Private to src/text: the tokenizer's tables. Every token's bytes in one pool, and two
 * open-addressing hash maps over them: bytes to id, and a pair of ids to its merge. */
#ifndef FSDP_TEXT_MAPS_H
#define FSDP_TEXT_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Token id's bytes are pool[offset[id] .. offset[id] + length[id]). */
struct token_table {
  unsigned char *pool;
  size_t pool_used, pool_cap;
  size_t *offset;
  uint32_t *length;
  int n;
};

void token_table_init(struct token_table *t, int n);
/* Sets id's bytes (once per id). */
void token_table_set(struct token_table *t, int id, const unsigned char *bytes, size_t n);
static inline const unsigned char *token_table_bytes(const struct token_table *t, uint32_t id) {
  return t->pool + t->offset[id];
}
void token_table_free(struct token_table *t);

/* A hash of a short byte string: 8 bytes a round, multiplied and folded. */
static inline uint64_t hash_bytes(const unsigned char *p, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  for (size_t i = 0; i < n; i++) w |= (uint64_t)p[i] << (8 * i);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

/* Bytes to id over a token_table: a slot holds id + 1, 0 when empty. */
struct bytes_map {
  uint32_t *slots;
  size_t mask;
};
void bytes_map_init(struct bytes_map *m, size_t entries);
/* Adds id under its bytes in the table; returns the id already there instead, or -1. */
int bytes_map_add(struct bytes_map *m, const struct token_table *t, uint32_t id);
/* The id whose bytes are p[0, n), or -1. */
int bytes_map_find(const struct bytes_map *m, const struct token_table *t, const unsigned char *p, size_t n);
void bytes_map_free(struct bytes_map *m);

/* (left, right) to the merge's rank and the id it makes. */
struct merge {
  uint64_t key; /* left << 32 | right; MERGE_EMPTY in a free slot */
  uint32_t rank;
  uint32_t merged;
};
#define MERGE_EMPTY UINT64_MAX
struct merge_map {
  struct merge *slots;
  size_t mask;
};
void merge_map_init(struct merge_map *m, size_t entries);
/* Adds a merge; returns the rank of one already there for the pair, or -1. */
long merge_map_add(struct merge_map *m, uint32_t left, uint32_t right, uint32_t rank, uint32_t merged);
static inline const struct merge *merge_map_find(const struct merge_map *m, uint32_t left, uint32_t right) {
  uint64_t key = (uint64_t)left << 32 | right;
  for (size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & m->mask;; i = (i + 1) & m->mask) {
    if (m->slots[i].key == key) return &m->slots[i];
    if (m->slots[i].key == MERGE_EMPTY) return NULL;
  }
}
void merge_map_free(struct merge_map *m);

#endif
