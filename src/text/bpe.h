/* Private to src/text: a piece's bytes to token ids, by merging adjacent tokens, the
 * pair of lowest rank first (the leftmost among equals), as Hugging Face's BPE does. */
#ifndef FSDP_TEXT_BPE_H
#define FSDP_TEXT_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* Pieces seen recently and their ids, so that a frequent word is merged once: a fixed
 * number of slots, each the last piece whose hash fell there (pieces up to
 * CACHED_PIECE_BYTES long with up to CACHED_PIECE_IDS ids). */
enum { CACHED_PIECE_BYTES = 22, CACHED_PIECE_IDS = 12, PIECE_CACHE_SLOTS = 1 << 15 };
struct cached_piece {
  uint8_t length, n_ids;
  unsigned char bytes[CACHED_PIECE_BYTES];
  uint32_t ids[CACHED_PIECE_IDS];
};

/* One thread's scratch: the symbols and candidate merges of a piece, grown to the
 * longest piece seen, and its cache. */
struct bpe_work {
  struct bpe_symbol *symbols;
  struct bpe_candidate *heap;
  size_t capacity;
  struct cached_piece *cache;
};

void bpe_work_init(struct bpe_work *w);
void bpe_work_free(struct bpe_work *w);
/* Appends the ids of the piece p[0, n) to out. */
void bpe_encode(const struct text_tokenizer *t, struct bpe_work *w, const unsigned char *p, size_t n,
                struct token_vec *out);

#endif
