#include "fsdp/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsdp/error.h"

enum { MAX_TRACKS = 64 };

/* Spans come from the compute thread and every stream's thread at once. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int enabled;
static double clock_zero_us;
static char track_names[MAX_TRACKS][TRACE_NAME_MAX];
static int n_tracks;
static struct trace_event *events;
static size_t n_events, capacity;

static double monotonic_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

void trace_clock_start(void) { clock_zero_us = monotonic_us(); }
double trace_now_us(void) { return monotonic_us() - clock_zero_us; }

void trace_enable(int on) { atomic_store(&enabled, on); }
int trace_enabled(void) { return atomic_load_explicit(&enabled, memory_order_relaxed); }

int trace_track(const char *name) {
  pthread_mutex_lock(&lock);
  int id = 0;
  while (id < n_tracks && strcmp(track_names[id], name) != 0) id++;
  if (id == n_tracks) {
    if (n_tracks == MAX_TRACKS) fsdp_fatal("trace: more than %d tracks", MAX_TRACKS);
    snprintf(track_names[id], TRACE_NAME_MAX, "%s", name);
    n_tracks++;
  }
  pthread_mutex_unlock(&lock);
  return id;
}

const char *trace_track_name(int track) {
  FSDP_CHECK(track >= 0 && track < n_tracks);
  return track_names[track];
}

int trace_num_tracks(void) { return n_tracks; }

/* Called with the lock held. */
static struct trace_event *new_event(void) {
  if (n_events == capacity) {
    capacity = capacity ? 2 * capacity : 4096;
    events = realloc(events, capacity * sizeof *events);
    if (!events) fsdp_fatal("trace: out of memory for %zu events", capacity);
  }
  struct trace_event *e = &events[n_events++];
  memset(e, 0, sizeof *e);
  return e;
}

void trace_span(int track, const char *name, double begin_us, double end_us) {
  if (!trace_enabled()) return;
  pthread_mutex_lock(&lock);
  struct trace_event *e = new_event();
  e->kind = TRACE_SPAN;
  e->track = track;
  snprintf(e->name, TRACE_NAME_MAX, "%s", name);
  e->ts_us = begin_us;
  e->dur_us = end_us - begin_us;
  pthread_mutex_unlock(&lock);
}

void trace_counter(const char *name, int n, const char *const *series, const double *values) {
  if (!trace_enabled()) return;
  FSDP_CHECK(n >= 0 && n <= TRACE_MAX_SERIES);
  double now = trace_now_us();
  pthread_mutex_lock(&lock);
  struct trace_event *e = new_event();
  e->kind = TRACE_COUNTER;
  snprintf(e->name, TRACE_NAME_MAX, "%s", name);
  e->ts_us = now;
  e->n_series = n;
  for (int i = 0; i < n; i++) {
    e->series[i] = series[i];
    e->values[i] = values[i];
  }
  pthread_mutex_unlock(&lock);
}

const struct trace_event *trace_events(size_t *count) {
  *count = n_events;
  return events;
}

void trace_clear(void) {
  pthread_mutex_lock(&lock);
  free(events);
  events = NULL;
  n_events = capacity = 0;
  pthread_mutex_unlock(&lock);
}
