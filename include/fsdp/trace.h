/* A recorder of profile events in memory: spans on named tracks (one per stream)
 * and counters (tracked memory by category, units unsharded). The cli writes
 * them out as Chrome trace JSON. Recording costs one branch while it is off. */
#ifndef FSDP_TRACE_H
#define FSDP_TRACE_H

#include <stddef.h>

enum { TRACE_NAME_MAX = 128, TRACE_MAX_SERIES = 8 };

enum trace_event_kind { TRACE_SPAN, TRACE_COUNTER };

struct trace_event {
  enum trace_event_kind kind;
  int track;                   /* spans: an id from trace_track */
  char name[TRACE_NAME_MAX];   /* span name, or counter track name */
  double ts_us, dur_us;        /* microseconds since trace_clock_start */
  int n_series;                /* counters: series names (static strings) and values */
  const char *series[TRACE_MAX_SERIES];
  double values[TRACE_MAX_SERIES];
};

/* Sets time zero (call it on every rank right after a barrier so that ranks line up). */
void trace_clock_start(void);
double trace_now_us(void);

void trace_enable(int on);
int trace_enabled(void);

/* The id of the track with this name, created on first use; ids count from 0 in
 * order of creation. */
int trace_track(const char *name);
const char *trace_track_name(int track);
int trace_num_tracks(void);

/* Records a span [begin_us, end_us) on a track; nothing while tracing is off. */
void trace_span(int track, const char *name, double begin_us, double end_us);
/* Records the values of n series of a counter track at the present time. */
void trace_counter(const char *name, int n, const char *const *series, const double *values);

/* The events recorded so far (valid until the next trace call), and clearing them. */
const struct trace_event *trace_events(size_t *count);
void trace_clear(void);

#endif
