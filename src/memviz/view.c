#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/memviz.h"

static int column_of(const struct rank_view *v, double time_us) {
  int k = (int)(time_us / v->end_us * v->n_columns);
  return k < v->n_columns ? k : v->n_columns - 1;
}

/* Steps never go back in time (snapshot.c checks it): a step starts where it
 * differs from the event before. */
static void find_step_starts(struct rank_view *v) {
  const struct snapshot_rank *r = v->rank;
  int n = 0;
  for (size_t e = 0; e < r->n_events; e++) n += e == 0 || r->events[e].step != r->events[e - 1].step;
  v->step_starts = fsdp_xmalloc(sizeof *v->step_starts * (size_t)n);
  for (size_t e = 0; e < r->n_events; e++)
    if (e == 0 || r->events[e].step != r->events[e - 1].step)
      v->step_starts[v->n_step_starts++] = (struct step_start){r->events[e].step, r->events[e].time_us};
}

/* Replays the events once: each column keeps the largest total seen in it (the state
 * carried into it counts too), and the whole replay keeps the first moment of the peak. */
static void replay(struct rank_view *v, int n_categories) {
  const struct snapshot_rank *r = v->rank;
  size_t row = sizeof(int64_t) * (size_t)n_categories;
  int64_t *held = fsdp_xmalloc(row);
  memcpy(held, r->start, row);
  int64_t total = 0;
  for (int c = 0; c < n_categories; c++) {
    total += held[c];
    if (held[c] > 0) v->shown[c] = 1;
  }
  v->peak_total = total;
  v->peak_time_us = 0;
  v->peak_event = -1;
  memcpy(v->peak_bytes, held, row);
  size_t e = 0;
  for (int k = 0; k < v->n_columns; k++) {
    int64_t *column = v->column_bytes + (size_t)k * (size_t)n_categories;
    int64_t column_total = total;
    memcpy(column, held, row);
    for (; e < r->n_events && column_of(v, r->events[e].time_us) == k; e++) {
      const struct snapshot_event *ev = &r->events[e];
      held[ev->category] += ev->bytes;
      total += ev->bytes;
      if (held[ev->category] > 0) v->shown[ev->category] = 1;
      if (total > column_total) {
        column_total = total;
        memcpy(column, held, row);
      }
      if (total > v->peak_total) {
        v->peak_total = total;
        v->peak_time_us = ev->time_us;
        v->peak_event = (long)e;
        memcpy(v->peak_bytes, held, row);
      }
    }
  }
  free(held);
}

void memviz_view_build(struct rank_view *v, const struct memory_snapshot *s, const struct snapshot_rank *r,
                       int n_columns) {
  memset(v, 0, sizeof *v);
  v->rank = r;
  /* Events all at (or within a nanosecond of) time 0 still need an axis of some length. */
  static const double MIN_AXIS_US = 1e-3;
  double last = r->events[r->n_events - 1].time_us;
  v->end_us = last > MIN_AXIS_US ? last : MIN_AXIS_US;
  v->n_columns = n_columns;
  size_t n_categories = (size_t)s->n_categories;
  v->column_bytes = fsdp_xmalloc(sizeof *v->column_bytes * (size_t)n_columns * n_categories);
  v->shown = fsdp_xcalloc(n_categories, sizeof *v->shown);
  v->peak_bytes = fsdp_xmalloc(sizeof *v->peak_bytes * n_categories);
  replay(v, s->n_categories);
  for (int c = 0; c < s->n_categories; c++) v->n_shown += v->shown[c];
  find_step_starts(v);
}

void memviz_view_free(struct rank_view *v) {
  free(v->column_bytes);
  free(v->shown);
  free(v->peak_bytes);
  free(v->step_starts);
  memset(v, 0, sizeof *v);
}
