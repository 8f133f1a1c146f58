/* The flat-parameter layout: for many shape sets and world sizes 1..8 the ranks'
 * shards cover every element of every parameter exactly once, at the right place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fsdp/flat_param.h"
#include "fsdp/rng.h"

static void check_layout(const struct param_spec *specs, int n, int world) {
  struct flat_layout l;
  flat_layout_init(&l, specs, n, world);
  size_t numel = 0;
  for (int p = 0; p < n; p++) {
    ASSERT(l.params[p].offset == numel, "param %d offset %zu, expected %zu", p, l.params[p].offset, numel);
    numel += l.params[p].numel;
  }
  ASSERT(l.numel == numel, "numel %zu, expected %zu", l.numel, numel);
  ASSERT(l.padded == l.shard * (size_t)world, "padded %zu != world %d * shard %zu", l.padded, world, l.shard);
  ASSERT(l.shard % FLAT_ALIGN == 0, "shard %zu not a multiple of %d", l.shard, FLAT_ALIGN);
  ASSERT(l.padded >= numel && l.padded - numel < (size_t)world * FLAT_ALIGN,
         "padding %zu for numel %zu at world %d is not minimal", l.padded - numel, numel, world);

  unsigned char *covered = calloc(numel ? numel : 1, 1);
  for (int r = 0; r < world; r++) {
    size_t owned_in_shard = 0;
    for (int p = 0; p < n; p++) {
      struct owned_range o = flat_layout_owned(&l, p, r);
      ASSERT(o.begin <= o.end && o.end <= l.params[p].numel, "rank %d param %d range [%zu,%zu) out of bounds", r, p,
             o.begin, o.end);
      for (size_t i = o.begin; i < o.end; i++) {
        size_t flat = l.params[p].offset + i;
        ASSERT((size_t)r * l.shard + o.shard_offset + (i - o.begin) == flat,
               "rank %d param %d element %zu maps to the wrong shard slot", r, p, i);
        covered[flat]++;
      }
      owned_in_shard += o.end - o.begin;
    }
    ASSERT(owned_in_shard <= l.shard, "rank %d owns %zu elements in a shard of %zu", r, owned_in_shard, l.shard);
  }
  for (size_t i = 0; i < numel; i++)
    ASSERT(covered[i] == 1, "world %d: flat element %zu covered %d times", world, i, covered[i]);
  free(covered);
  flat_layout_free(&l);
}

int main(void) {
  enum { SHAPE_SETS = 200, MAX_PARAMS = 12 };
  struct param_spec specs[MAX_PARAMS];
  char names[MAX_PARAMS][16];
  for (int set = 0; set < SHAPE_SETS; set++) {
    int n = 1 + (int)rng_below(7, 1, (uint64_t)set, MAX_PARAMS);
    for (int p = 0; p < n; p++) {
      uint64_t index = (uint64_t)set * 64 + (uint64_t)p;
      snprintf(names[p], sizeof names[p], "p%d", p);
      int ndim = 1 + (int)rng_below(7, 2, index, 2);
      specs[p] = (struct param_spec){names[p], ndim, {0}, PARAM_INIT_CONSTANT, 0.0f, ndim > 1, 0.0f};
      for (int d = 0; d < ndim; d++) specs[p].shape[d] = 1 + rng_below(7, 3 + (uint64_t)d, index, set < 100 ? 9 : 300);
    }
    for (int world = 1; world <= 8; world++) check_layout(specs, n, world);
  }
  printf("flat_param: %d shape sets x world sizes 1..8, %d failures\n", SHAPE_SETS, check_failures);
  return check_failures ? 1 : 0;
}
