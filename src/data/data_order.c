/* Which window comes when. An epoch visits every window of every range once, as llm.c's
 * DataLoader with shuffling does: the ranges in a seeded order, each range's windows in a
 * seeded permutation, both drawn again each epoch. The permutations are Feistel networks
 * keyed by Philox (a bijection of [0, 4^h) cycle-walked into [0, n)), so that any window's
 * place is computed in O(1) memory: a shard of 100M tokens is never given an index array,
 * and a rank computes the windows it reads and no other. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/rng.h"
#include "fsdp/data.h"

/* Philox streams apart from the weights' and from each other: the tag in the top 16 bits.
 * A range's windows take (epoch, range) in the low 48: 28 bits of epoch, 20 of range. */
static const uint64_t RANGE_ORDER_TAG = 0xda7bull << 48, WINDOW_ORDER_TAG = 0xda7cull << 48;
enum { EPOCH_BITS = 28, RANGE_BITS = 20 };
/* Four rounds make a Feistel network a pseudo-random permutation (Luby-Rackoff). */
enum { FEISTEL_ROUNDS = 4 };

static uint64_t feistel(uint64_t seed, uint64_t stream, int half, uint64_t x) {
  uint64_t mask = (1ull << half) - 1, left = x >> half, right = x & mask;
  for (uint64_t round = 0; round < FEISTEL_ROUNDS; round++) {
    uint32_t out[4];
    philox4x32(seed, stream, round << 40 | right, out);
    uint64_t next = left ^ (((uint64_t)out[1] << 32 | out[0]) & mask);
    left = right;
    right = next;
  }
  return left << half | right;
}

uint64_t data_permute(uint64_t seed, uint64_t stream, uint64_t n, uint64_t i) {
  FSDP_CHECK(i < n);
  if (n == 1) return 0;
  int bits = 1;
  while (bits < 64 && (1ull << bits) < n) bits++;
  int half = (bits + 1) / 2;
  FSDP_CHECK(half <= 32);
  /* The network permutes [0, 4^half), less than 4 n: walking a value out of [0, n) on
   * along its cycle ends, in under 4 steps on average, at the next value in it. */
  uint64_t x = i;
  do x = feistel(seed, stream, half, x);
  while (x >= n);
  return x;
}

void data_order_init(struct data_order *o, struct token_range *ranges, int n_ranges, int T, uint64_t seed,
                     int shuffle) {
  memset(o, 0, sizeof *o);
  FSDP_CHECK(n_ranges > 0 && n_ranges < (1 << RANGE_BITS) && T > 0);
  o->ranges = ranges;
  o->n_ranges = n_ranges;
  o->T = T;
  o->seed = seed;
  o->shuffle = shuffle;
  for (int i = 0; i < n_ranges; i++) o->windows_per_epoch += ranges[i].n_windows;
  FSDP_CHECK(o->windows_per_epoch > 0);
  o->order = fsdp_xcalloc((size_t)n_ranges, sizeof *o->order);
  o->before = fsdp_xcalloc((size_t)n_ranges + 1, sizeof *o->before);
  o->cached_epoch = UINT64_MAX;
}

/* The epoch's order of ranges, and the windows before each in it. */
static void take_epoch(struct data_order *o, uint64_t epoch) {
  if (o->cached_epoch == epoch) return;
  FSDP_CHECK(epoch < (1ull << EPOCH_BITS));
  o->before[0] = 0;
  for (int k = 0; k < o->n_ranges; k++) {
    o->order[k] = o->shuffle ? (int)data_permute(o->seed, RANGE_ORDER_TAG | epoch, (uint64_t)o->n_ranges, (uint64_t)k)
                             : k;
    o->before[k + 1] = o->before[k] + o->ranges[o->order[k]].n_windows;
  }
  o->cached_epoch = epoch;
}

struct window_place data_order_place(struct data_order *o, uint64_t u) {
  uint64_t epoch = u / o->windows_per_epoch, at = u % o->windows_per_epoch;
  take_epoch(o, epoch);
  /* The last place k whose windows start at or before `at`: a range with windows. */
  int lo = 0, hi = o->n_ranges;
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    if (o->before[mid] <= at)
      lo = mid;
    else
      hi = mid;
  }
  int range = o->order[lo];
  uint64_t w = at - o->before[lo], n = o->ranges[range].n_windows;
  FSDP_CHECK(w < n);
  if (o->shuffle) w = data_permute(o->seed, WINDOW_ORDER_TAG | epoch << RANGE_BITS | (uint64_t)range, n, w);
  return (struct window_place){epoch, range, (size_t)w};
}

uint64_t data_order_epochs(const struct data_order *o) {
  uint64_t most = UINT64_MAX / o->windows_per_epoch;
  return most < (1ull << EPOCH_BITS) ? most : 1ull << EPOCH_BITS;
}

void data_order_free(struct data_order *o) {
  free(o->ranges);
  free(o->order);
  free(o->before);
  memset(o, 0, sizeof *o);
}
