/* The meta device backend: address ranges, no work, and a clock (fsdp/meta_clock.h). Its
 * allocations are real in the accounting (fsdp/memory.h) and in the caching allocator
 * above it, so a step run on it allocates and frees exactly what it would on the device
 * it plans for. Its streams run nothing but keep time; its events carry the time of their
 * point, yet a query says "reached", as a plan without a clock did: the memory plan does
 * not depend on the rates. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fsdp/error.h"
#include "fsdp/meta_clock.h"

/* Addresses start away from 0 and never come back: the caching allocator reuses them. */
static uintptr_t next_address = 1u << 20;
static pthread_mutex_t address_lock = PTHREAD_MUTEX_INITIALIZER;

static void *meta_alloc(struct device *d, size_t bytes) {
  (void)d;
  pthread_mutex_lock(&address_lock);
  uintptr_t address = next_address;
  next_address += (bytes + 255) / 256 * 256;
  pthread_mutex_unlock(&address_lock);
  return (void *)address;
}

static void meta_free(struct device *d, void *ptr, size_t bytes) {
  (void)d;
  (void)ptr;
  (void)bytes;
}

static void *meta_pinned_alloc(size_t bytes) { return meta_alloc(NULL, bytes); }
static void meta_pinned_free(void *ptr) { (void)ptr; }

/* ---- the clock ---- */

struct meta_stream {
  struct stream *stream;
  int synchronous;    /* runs on the calling thread: the host stream of a device planning for the cpu */
  double clock;       /* when the work launched on it so far is done */
  double ready;       /* the latest point of the events it was told to wait for */
  char ready_source[META_CLOCK_NAME_MAX];
  double busy_s, blocked_s; /* for stream_times, since its last reset */
  struct meta_stream *next;
};

struct meta_event {
  double time;
  char source[META_CLOCK_NAME_MAX];
};

/* The host's last wait, to tell why a stream running beside the host found no work. */
struct host_wait {
  double from, to;
  char source[META_CLOCK_NAME_MAX];
};

static struct {
  pthread_mutex_t lock;
  double now;    /* the host's clock; events keep their times, so it never goes back */
  double origin; /* its time at the last reset */
  struct host_wait last_wait;
  struct meta_stream *streams;
  struct device_speed speed[DEVICE_META];
  struct meta_clock_reading tallies;
} clock_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const struct device_speed NO_SPEED;

void meta_clock_set_speed(enum device_kind target, const struct device_speed *speed) {
  FSDP_CHECK(target == DEVICE_CPU || target == DEVICE_CUDA);
  pthread_mutex_lock(&clock_state.lock);
  clock_state.speed[target] = *speed;
  pthread_mutex_unlock(&clock_state.lock);
}

const struct device_speed *meta_clock_speed(const struct device *d) {
  return device_kind(d) == DEVICE_META ? &clock_state.speed[device_target(d)] : &NO_SPEED;
}

static double max2(double a, double b) { return a > b ? a : b; }

/* A stream's name, as much of it as a tally keeps. */
static void set_name(char *dst, const char *src) {
  snprintf(dst, META_CLOCK_NAME_MAX, "%.*s", META_CLOCK_NAME_MAX - 1, src);
}

static void tally(struct meta_tally *t, int *n, const char *stream, const char *what, double seconds) {
  if (seconds <= 0) return;
  int i = 0;
  while (i < *n && !(strcmp(t[i].stream, stream) == 0 && strcmp(t[i].what, what) == 0)) i++;
  if (i == *n && *n == META_CLOCK_TALLIES) { /* full: the last one becomes everything else's */
    i = *n - 1;
    set_name(t[i].stream, "other");
    set_name(t[i].what, "other");
  } else if (i == *n) {
    (*n)++;
    set_name(t[i].stream, stream);
    set_name(t[i].what, what);
    t[i].seconds = 0;
  }
  t[i].seconds += seconds;
}

static void tally_idle(const struct meta_stream *m, const char *why, double seconds) {
  if (m->stream->is_host) tally(clock_state.tallies.idle, &clock_state.tallies.n_idle, m->stream->name, why, seconds);
}

/* A host stream that ran beside the host and had no work from `from` to `to`: the host was
 * late, blocked in its last wait for part of it, busy for the rest. */
static void tally_host_late(const struct meta_stream *m, double from, double to) {
  const struct host_wait *w = &clock_state.last_wait;
  double blocked = max2(0, (w->to < to ? w->to : to) - max2(from, w->from));
  tally_idle(m, w->source, blocked);
  tally_idle(m, "host", to - from - blocked);
}

/* The host waits until `until` for source's work. */
static void host_block(const char *source, double until) {
  if (until <= clock_state.now) return;
  tally(clock_state.tallies.idle, &clock_state.tallies.n_idle, "host", source, until - clock_state.now);
  clock_state.last_wait = (struct host_wait){clock_state.now, until, ""};
  set_name(clock_state.last_wait.source, source);
  clock_state.now = until;
}

static void spend_locked(struct meta_stream *m, const char *what, double seconds) {
  double start;
  if (m->synchronous) {
    start = clock_state.now;
  } else {
    double enqueued = clock_state.now;
    start = max2(max2(m->clock, m->ready), enqueued);
    double late = max2(0, enqueued - m->clock);
    if (late > 0) tally_host_late(m, m->clock, enqueued);
    double waited = start - max2(m->clock, enqueued);
    tally_idle(m, m->ready_source, waited);
    m->blocked_s += waited;
    clock_state.now += clock_state.speed[m->stream->device->target].launch_s;
  }
  m->clock = start + seconds;
  if (m->synchronous) clock_state.now = m->clock;
  m->busy_s += seconds;
  tally(clock_state.tallies.busy, &clock_state.tallies.n_busy, m->stream->name, what, seconds);
}

void stream_spend(struct stream *s, const char *what, double seconds) {
  if (device_kind(stream_device(s)) != DEVICE_META) return;
  pthread_mutex_lock(&clock_state.lock);
  spend_locked(s->impl, what, seconds);
  pthread_mutex_unlock(&clock_state.lock);
}

static void *meta_stream_create(struct stream *s, int host) {
  struct meta_stream *m = fsdp_xcalloc(1, sizeof *m);
  m->stream = s;
  m->synchronous = host && s->device->target != DEVICE_CUDA;
  pthread_mutex_lock(&clock_state.lock);
  m->clock = clock_state.now;
  m->next = clock_state.streams;
  clock_state.streams = m;
  pthread_mutex_unlock(&clock_state.lock);
  return m;
}

static void meta_stream_destroy(struct stream *s) {
  pthread_mutex_lock(&clock_state.lock);
  struct meta_stream **at = &clock_state.streams;
  while (*at != s->impl) at = &(*at)->next;
  *at = (*at)->next;
  pthread_mutex_unlock(&clock_state.lock);
  free(s->impl);
}

/* Where the stream's work launched so far ends: its waits included. */
static double stream_end(const struct meta_stream *m) { return max2(m->clock, m->ready); }

static void meta_wait_event(struct stream *s, struct event *e) {
  struct meta_stream *m = s->impl;
  const struct meta_event *point = e->impl;
  pthread_mutex_lock(&clock_state.lock);
  if (m->synchronous) {
    double waited = point->time - clock_state.now;
    if (waited > 0) {
      tally_idle(m, point->source, waited);
      m->blocked_s += waited;
      clock_state.last_wait = (struct host_wait){clock_state.now, point->time, ""};
      set_name(clock_state.last_wait.source, point->source);
      clock_state.now = m->clock = point->time;
    }
  } else if (point->time > m->ready) {
    m->ready = point->time;
    set_name(m->ready_source, point->source);
  }
  pthread_mutex_unlock(&clock_state.lock);
}

static void meta_synchronize(struct stream *s) {
  struct meta_stream *m = s->impl;
  pthread_mutex_lock(&clock_state.lock);
  host_block(s->name, stream_end(m));
  pthread_mutex_unlock(&clock_state.lock);
}

static void meta_times(struct stream *s, struct stream_times *out, int reset) {
  struct meta_stream *m = s->impl;
  pthread_mutex_lock(&clock_state.lock);
  out->busy_ms = m->busy_s * 1e3;
  out->blocked_ms = m->blocked_s * 1e3;
  if (reset) m->busy_s = m->blocked_s = 0;
  pthread_mutex_unlock(&clock_state.lock);
}

static void *meta_event_create(struct device *d) {
  (void)d;
  return fsdp_xcalloc(1, sizeof(struct meta_event));
}
static void meta_event_destroy(struct event *e) { free(e->impl); }

static void meta_record(struct event *e, struct stream *s) {
  struct meta_event *point = e->impl;
  pthread_mutex_lock(&clock_state.lock);
  point->time = stream_end(s->impl);
  set_name(point->source, s->name);
  pthread_mutex_unlock(&clock_state.lock);
}

static int reached(const struct event *e) {
  (void)e;
  return 1;
}

static void meta_event_synchronize(struct event *e) {
  const struct meta_event *point = e->impl;
  pthread_mutex_lock(&clock_state.lock);
  host_block(point->source, point->time);
  pthread_mutex_unlock(&clock_state.lock);
}

/* A copy within device memory reads and writes each byte; one across the host link
 * crosses it once. */
static void meta_copy(struct stream *s, void *dst, const void *src, size_t bytes, int to_device, int from_device) {
  (void)dst, (void)src;
  const struct device_speed *speed = meta_clock_speed(s->device);
  double rate = to_device && from_device ? speed->memory_bytes / 2 : speed->host_link_bytes;
  stream_spend(s, "copy", rate > 0 ? speed->op_s + (double)bytes / rate : 0);
}

static void meta_memset(struct stream *s, void *dst, int byte, size_t bytes) {
  (void)dst, (void)byte;
  const struct device_speed *speed = meta_clock_speed(s->device);
  stream_spend(s, "memset", speed->memory_bytes > 0 ? speed->op_s + (double)bytes / speed->memory_bytes : 0);
}

double meta_clock_now(void) {
  pthread_mutex_lock(&clock_state.lock);
  double now = clock_state.now;
  pthread_mutex_unlock(&clock_state.lock);
  return now;
}

void meta_clock_read(struct meta_clock_reading *out, int reset) {
  pthread_mutex_lock(&clock_state.lock);
  double now = clock_state.now;
  /* A host stream that ran beside the host and stands idle at the end: idle from its
   * last work, or from the reset, to now. */
  for (struct meta_stream *m = clock_state.streams; m; m = m->next)
    if (!m->synchronous && m->stream->is_host && stream_end(m) < now) {
      tally_host_late(m, max2(stream_end(m), clock_state.origin), now);
      if (reset) m->clock = now;
    }
  *out = clock_state.tallies;
  out->host_s = now - clock_state.origin;
  if (reset) {
    memset(&clock_state.tallies, 0, sizeof clock_state.tallies);
    clock_state.origin = now;
  }
  pthread_mutex_unlock(&clock_state.lock);
}

double meta_tally_sum(const struct meta_tally *t, int n, const char *stream, const char *what) {
  double sum = 0;
  for (int i = 0; i < n; i++)
    if ((!stream || strcmp(t[i].stream, stream) == 0) && (!what || strcmp(t[i].what, what) == 0)) sum += t[i].seconds;
  return sum;
}

/* Words are real host memory (host threads may read them); no stream ever writes one. */
static void no_word_op(struct stream *s, struct stream_word *w, uint32_t value) { (void)s, (void)w, (void)value; }

const struct device_backend META_BACKEND = {
    .name = "meta",
    .kind = DEVICE_META,
    .computes = 0,
    .raw_alloc = meta_alloc,
    .raw_free = meta_free,
    .pinned_alloc = meta_pinned_alloc,
    .pinned_free = meta_pinned_free,
    .stream_create = meta_stream_create,
    .stream_destroy = meta_stream_destroy,
    .stream_launch = NULL, /* stream_launch drops launches on devices that do not compute */
    .stream_wait_event = meta_wait_event,
    .stream_synchronize = meta_synchronize,
    .stream_times = meta_times,
    .event_create = meta_event_create,
    .event_destroy = meta_event_destroy,
    .event_record = meta_record,
    .event_query = reached,
    .event_synchronize = meta_event_synchronize,
    .copy = meta_copy,
    .memset = meta_memset,
    .word_alloc = host_word_alloc,
    .word_free = host_word_free,
    .stream_write_word = no_word_op,
    .stream_wait_word = no_word_op,
};
