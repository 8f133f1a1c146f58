/* A memory snapshot file as `fsdp train --memory-snapshot` writes it (format
 * "fsdp-memory-snapshot", version 1), read and fully checked for `fsdp memviz`. */
#ifndef FSDP_CLI_MEMORY_SNAPSHOT_H
#define FSDP_CLI_MEMORY_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

struct snapshot_event {
  double time_us; /* since recording began */
  int64_t bytes;  /* > 0: an allocation, < 0: a free */
  int category;   /* index into memory_snapshot.categories */
  int step;
  const char *unit, *op; /* point into the parsed document */
};

struct snapshot_rank {
  int rank;
  int64_t *start; /* bytes per category when recording began */
  struct snapshot_event *events;
  size_t n_events;
};

struct memory_snapshot {
  const char *path;
  void *document; /* the parsed JSON (a cJSON tree), which the strings point into */
  int world_size;
  int first_step, last_step; /* "steps": the first and the last step recorded */
  const char **categories; /* in the file's order, which is the order they are stacked in */
  int n_categories;
  struct snapshot_rank *ranks;
  int n_ranks;
};

/* Reads and checks the file: every problem ends the job with a message naming the
 * file and, where it applies, the field, rank and event. */
void memory_snapshot_load(struct memory_snapshot *s, const char *path);
void memory_snapshot_free(struct memory_snapshot *s);

#endif
