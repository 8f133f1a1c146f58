#include "fsdp/memory.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/timer.h"
#include "fsdp/trace.h"

/* Each block carries a header with its size and category so that mem_free needs
 * only the pointer; the header is padded to keep the payload 64-byte aligned. */
enum { HEADER_BYTES = 64 };

struct block_header {
  size_t bytes;
  int category;
  unsigned magic;
};

static const unsigned BLOCK_MAGIC = 0xf5d9a11cu;

/* The tracker is shared by the compute thread and, later, the comm stream threads. */
static pthread_mutex_t tracker_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_stats stats;

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

/* The snapshot, guarded by tracker_lock like the stats it follows. */
static struct {
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

void mem_snapshot_start(void) {
  pthread_mutex_lock(&tracker_lock);
  snapshot.recording = 1;
  snapshot.start_ms = time_now_ms();
  memcpy(snapshot.start, stats.current, sizeof snapshot.start);
  snapshot.count = 0;
  pthread_mutex_unlock(&tracker_lock);
}

void mem_snapshot_stop(void) {
  pthread_mutex_lock(&tracker_lock);
  snapshot.recording = 0;
  pthread_mutex_unlock(&tracker_lock);
}

void mem_snapshot_set_step(int step) {
  pthread_mutex_lock(&tracker_lock);
  snapshot.step = step;
  pthread_mutex_unlock(&tracker_lock);
}

const struct mem_event *mem_snapshot_events(size_t *count, size_t start[MEM_NUM_CATEGORIES]) {
  pthread_mutex_lock(&tracker_lock);
  *count = snapshot.count;
  memcpy(start, snapshot.start, sizeof snapshot.start);
  const struct mem_event *events = snapshot.events;
  pthread_mutex_unlock(&tracker_lock);
  return events;
}

void mem_snapshot_clear(void) {
  pthread_mutex_lock(&tracker_lock);
  free(snapshot.events);
  memset(&snapshot, 0, sizeof snapshot);
  pthread_mutex_unlock(&tracker_lock);
}

/* A profile trace gets the bytes of every category after each change (a counter track). */
static void trace_memory(const struct mem_stats *now) {
  double values[MEM_NUM_CATEGORIES];
  for (int c = 0; c < MEM_NUM_CATEGORIES; c++) values[c] = (double)now->current[c];
  trace_counter("memory", MEM_NUM_CATEGORIES, CATEGORY_NAMES, values);
}

static void account(int category, size_t bytes, int sign) {
  pthread_mutex_lock(&tracker_lock);
  if (sign > 0) {
    stats.current[category] += bytes;
    stats.total_current += bytes;
    if (stats.current[category] > stats.peak[category]) stats.peak[category] = stats.current[category];
    if (stats.total_current > stats.total_peak) {
      stats.total_peak = stats.total_current;
      memcpy(stats.at_total_peak, stats.current, sizeof stats.current);
    }
  } else {
    stats.current[category] -= bytes;
    stats.total_current -= bytes;
  }
  if (snapshot.recording) record_event(category, sign * (long long)bytes);
  struct mem_stats now = stats;
  pthread_mutex_unlock(&tracker_lock);
  if (trace_enabled()) trace_memory(&now);
}

static void *allocate(size_t bytes, enum mem_category category, int zeroed) {
  FSDP_CHECK(category >= 0 && category < MEM_NUM_CATEGORIES);
  size_t payload = (bytes + 63) & ~(size_t)63;
  void *raw = NULL;
  if (posix_memalign(&raw, 64, HEADER_BYTES + payload) != 0)
    fsdp_fatal("out of memory allocating %zu bytes for %s", bytes, mem_category_name(category));
  memset(raw, 0, zeroed ? HEADER_BYTES + payload : HEADER_BYTES);
  struct block_header *h = raw;
  h->bytes = bytes;
  h->category = category;
  h->magic = BLOCK_MAGIC;
  account(category, bytes, +1);
  return (char *)raw + HEADER_BYTES;
}

void *mem_alloc(size_t bytes, enum mem_category category) { return allocate(bytes, category, 1); }
void *mem_alloc_for_overwrite(size_t bytes, enum mem_category category) { return allocate(bytes, category, 0); }

static struct block_header *header_of(const void *ptr) {
  struct block_header *h = (struct block_header *)((char *)ptr - HEADER_BYTES);
  FSDP_CHECK(h->magic == BLOCK_MAGIC);
  return h;
}

void mem_free(void *ptr) {
  if (!ptr) return;
  struct block_header *h = header_of(ptr);
  account(h->category, h->bytes, -1);
  h->magic = 0;
  free(h);
}

void mem_count_planned(enum mem_category category, long long bytes) {
  FSDP_CHECK(category >= 0 && category < MEM_NUM_CATEGORIES);
  account(category, (size_t)(bytes < 0 ? -bytes : bytes), bytes < 0 ? -1 : +1);
}

void mem_get_stats(struct mem_stats *out) {
  pthread_mutex_lock(&tracker_lock);
  *out = stats;
  pthread_mutex_unlock(&tracker_lock);
}

void mem_reset_peaks(void) {
  pthread_mutex_lock(&tracker_lock);
  memcpy(stats.peak, stats.current, sizeof stats.peak);
  memcpy(stats.at_total_peak, stats.current, sizeof stats.current);
  stats.total_peak = stats.total_current;
  pthread_mutex_unlock(&tracker_lock);
}

const char *mem_category_name(enum mem_category category) {
  return category >= 0 && category < MEM_NUM_CATEGORIES ? CATEGORY_NAMES[category] : "unknown";
}
