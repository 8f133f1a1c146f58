/* The accounting side of the allocator: per device, current and peak bytes of each
 * category; the labels the hooks push; memory snapshots of one device. */
#include "fsdp/memory.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fsdp/error.h"
#include "fsdp/timer.h"
#include "fsdp/trace.h"

static const char *const CATEGORY_NAMES[MEM_NUM_CATEGORIES] = {
    "sharded_params", "unsharded_params", "sharded_grads", "unsharded_grads",
    "optimizer",      "activations",      "comm",          "other"};

struct context {
  char unit[MEM_LABEL_MAX];
  char op[MEM_LABEL_MAX];
};
enum { MAX_CONTEXT_DEPTH = 8 };
static _Thread_local struct context contexts[MAX_CONTEXT_DEPTH];
static _Thread_local int context_depth;

static void copy_label(char *dst, const char *src) {
  snprintf(dst, MEM_LABEL_MAX, "%s", src ? src : "");
}

void mem_push_context(const char *unit, const char *op) {
  FSDP_CHECK(context_depth < MAX_CONTEXT_DEPTH);
  copy_label(contexts[context_depth].unit, unit);
  copy_label(contexts[context_depth].op, op);
  context_depth++;
}

void mem_pop_context(void) {
  FSDP_CHECK(context_depth > 0);
  context_depth--;
}

/* The snapshot, under its own lock, taken inside a tracker's. */
static pthread_mutex_t snapshot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  const struct device *device;
  int recording, step;
  double start_ms;
  size_t start[MEM_NUM_CATEGORIES];
  struct mem_event *events;
  size_t count, capacity;
} snapshot;

static void record_event(int category, long long bytes) {
  if (snapshot.count == snapshot.capacity) {
    snapshot.capacity = snapshot.capacity ? 2 * snapshot.capacity : 4096;
    snapshot.events = fsdp_xrealloc(snapshot.events, snapshot.capacity * sizeof *snapshot.events);
  }
  struct mem_event *e = &snapshot.events[snapshot.count++];
  e->time_us = (time_now_ms() - snapshot.start_ms) * 1e3;
  e->bytes = bytes;
  e->category = category;
  e->step = snapshot.step;
  const struct context *c = context_depth ? &contexts[context_depth - 1] : NULL;
  copy_label(e->unit, c ? c->unit : "");
  copy_label(e->op, c ? c->op : "");
}

void mem_snapshot_start(struct device *d) {
  pthread_mutex_lock(&d->tracker.lock);
  pthread_mutex_lock(&snapshot_lock);
  snapshot.device = d;
  snapshot.recording = 1;
  snapshot.start_ms = time_now_ms();
  memcpy(snapshot.start, d->tracker.stats.current, sizeof snapshot.start);
  snapshot.count = 0;
  pthread_mutex_unlock(&snapshot_lock);
  pthread_mutex_unlock(&d->tracker.lock);
}

void mem_snapshot_stop(void) {
  pthread_mutex_lock(&snapshot_lock);
  snapshot.recording = 0;
  pthread_mutex_unlock(&snapshot_lock);
}

void mem_snapshot_set_step(int step) {
  pthread_mutex_lock(&snapshot_lock);
  snapshot.step = step;
  pthread_mutex_unlock(&snapshot_lock);
}

const struct mem_event *mem_snapshot_events(size_t *count, size_t start[MEM_NUM_CATEGORIES]) {
  pthread_mutex_lock(&snapshot_lock);
  *count = snapshot.count;
  memcpy(start, snapshot.start, sizeof snapshot.start);
  const struct mem_event *events = snapshot.events;
  pthread_mutex_unlock(&snapshot_lock);
  return events;
}

void mem_snapshot_clear(void) {
  pthread_mutex_lock(&snapshot_lock);
  free(snapshot.events);
  memset(&snapshot, 0, sizeof snapshot);
  pthread_mutex_unlock(&snapshot_lock);
}

/* A profile trace gets the bytes of every category after each change (a counter track). */
static void trace_memory(const struct mem_stats *now) {
  double values[MEM_NUM_CATEGORIES];
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++) values[c] = (double)now->current[c];
  trace_counter("memory", MEM_NUM_CATEGORIES, CATEGORY_NAMES, values);
}

void mem_account(struct device *d, size_t bytes, enum mem_category category, int sign) {
  struct mem_tracker *t = &d->tracker;
  struct mem_stats *stats = &t->stats;
  pthread_mutex_lock(&t->lock);
  if (sign > 0) {
    stats->current[category] += bytes;
    stats->total_current += bytes;
    if (stats->current[category] > stats->peak[category]) stats->peak[category] = stats->current[category];
    if (stats->total_current > stats->total_peak) {
      stats->total_peak = stats->total_current;
      memcpy(stats->at_total_peak, stats->current, sizeof stats->current);
    }
  } else {
    stats->current[category] -= bytes;
    stats->total_current -= bytes;
  }
  pthread_mutex_lock(&snapshot_lock);
  if (snapshot.recording && snapshot.device == d) record_event(category, sign * (long long)bytes);
  pthread_mutex_unlock(&snapshot_lock);
  struct mem_stats now = *stats;
  pthread_mutex_unlock(&t->lock);
  if (trace_enabled() && d->backend->kind != DEVICE_META) trace_memory(&now);
}

void device_memory_stats(const struct device *d, struct mem_stats *out) {
  struct mem_tracker *t = (struct mem_tracker *)&d->tracker;
  pthread_mutex_lock(&t->lock);
  *out = t->stats;
  pthread_mutex_unlock(&t->lock);
}

void device_reset_peaks(struct device *d) {
  struct mem_tracker *t = &d->tracker;
  pthread_mutex_lock(&t->lock);
  memcpy(t->stats.peak, t->stats.current, sizeof t->stats.peak);
  memcpy(t->stats.at_total_peak, t->stats.current, sizeof t->stats.current);
  t->stats.total_peak = t->stats.total_current;
  pthread_mutex_unlock(&t->lock);
}

const char *mem_category_name(enum mem_category category) {
  return category >= 0 && category < MEM_NUM_CATEGORIES ? CATEGORY_NAMES[category] : "unknown";
}
