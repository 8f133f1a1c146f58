/* memviz: a memory snapshot file as `fsdp train --memory-snapshot` writes it (format
 * "fsdp-memory-snapshot", version 1), read and fully checked; what each rank's chart
 * shows of it; `fsdp memviz`, which draws it; and `fsdp traceviz`, which draws a step
 * of a `--trace` file. Only a file is read and one written: no MPI, nothing of the
 * runtime. */
#ifndef FSDP_MEMVIZ_H
#define FSDP_MEMVIZ_H

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

/* Where the events of a step begin. */
struct step_start {
  int step;
  double time_us;
};

/* One rank, reduced to what is drawn: the time axis is cut into columns, one per
 * pixel of the plot, and each column shows the moment in it with the most bytes in
 * total, so that no peak is lost however many events fall into a column. */
struct rank_view {
  const struct snapshot_rank *rank;
  double end_us; /* the time axis runs from 0 to here */
  int n_columns;
  int64_t *column_bytes; /* n_columns x n_categories */
  int *shown;            /* per category: it holds bytes at some moment */
  int n_shown;
  int64_t peak_total;
  double peak_time_us;
  int64_t *peak_bytes; /* per category, at the peak */
  long peak_event;     /* the allocation that reached the peak; -1: the peak is the memory at the start */
  struct step_start *step_starts; /* in time order */
  int n_step_starts;
};

void memviz_view_build(struct rank_view *v, const struct memory_snapshot *s, const struct snapshot_rank *r,
                       int n_columns);
void memviz_view_free(struct rank_view *v);

/* `fsdp memviz SNAPSHOT -o OUT`: draws a memory snapshot as HTML or SVG. argv[0] is
 * "memviz"; returns the exit status. */
int fsdp_memviz_main(int argc, char **argv);

/* `fsdp traceviz TRACE -o OUT.svg`: draws a step of a trace of `fsdp train --trace` as
 * a timeline of the compute thread and the comm streams. argv[0] is "traceviz". */
int fsdp_traceviz_main(int argc, char **argv);

#endif
