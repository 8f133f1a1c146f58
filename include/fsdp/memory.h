/* Memory accounting: every block a device's allocator hands out (fsdp/device.h) is
 * counted, in a side table, under a category, so that current and peak bytes per
 * category of each device are known exactly. */
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
  size_t at_total_peak[MEM_NUM_CATEGORIES]; /* each category's bytes at that moment */
};

const char *mem_category_name(enum mem_category category);

/* Labels for what this thread allocates and frees until the matching pop: the
 * unit ("block 3", "" for none) and the operation ("forward", "all-gather"). A
 * memory snapshot records them with each event. Contexts nest (at most 8 deep). */
enum { MEM_LABEL_MAX = 32 };
void mem_push_context(const char *unit, const char *op);
void mem_pop_context(void);

/* A memory snapshot: every allocation (bytes > 0) and free (bytes < 0) of one device
 * between start and stop, with the bytes of each category when it started. */
struct mem_event {
  double time_us; /* since mem_snapshot_start */
  long long bytes;
  int category;
  int step;
  char unit[MEM_LABEL_MAX];
  char op[MEM_LABEL_MAX];
};
struct device;
void mem_snapshot_start(struct device *d);
void mem_snapshot_stop(void);
/* The step number recorded with the events that follow. */
void mem_snapshot_set_step(int step);
/* Valid until the next snapshot call; start gets each category's bytes at mem_snapshot_start. */
const struct mem_event *mem_snapshot_events(size_t *count, size_t start[MEM_NUM_CATEGORIES]);
void mem_snapshot_clear(void);

#endif
