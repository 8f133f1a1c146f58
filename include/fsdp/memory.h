/* Tracked memory: every buffer of the system is allocated here with a category,
 * so that current and peak bytes per category are known exactly. */
#ifndef FSDP_MEMORY_H
#define FSDP_MEMORY_H

#include <stddef.h>

enum mem_category {
  MEM_SHARDED_PARAMS,
  MEM_UNSHARDED_PARAMS,
  MEM_SHARDED_GRADS,
  MEM_UNSHARDED_GRADS,
  MEM_OPTIMIZER,
  MEM_ACTIVATIONS,
  MEM_COMM,
  MEM_OTHER,
  MEM_NUM_CATEGORIES
};

struct mem_stats {
  size_t current[MEM_NUM_CATEGORIES];
  size_t peak[MEM_NUM_CATEGORIES];
  size_t total_current;
  size_t total_peak; /* peak of the sum, not the sum of peaks */
};

/* Returns zeroed memory aligned to 64 bytes; bytes may be 0. Ends the job when out of memory. */
void *mem_alloc(size_t bytes, enum mem_category category);
/* The same, not zeroed: for a buffer its producer overwrites whole (an all-gather's
 * output), so that its pages are first touched by that producer, not by the caller. */
void *mem_alloc_for_overwrite(size_t bytes, enum mem_category category);
/* Accepts NULL. */
void mem_free(void *ptr);

void mem_get_stats(struct mem_stats *out);
/* Restarts the peaks from the current values (e.g. at the start of a step). */
void mem_reset_peaks(void);
const char *mem_category_name(enum mem_category category);

#endif
