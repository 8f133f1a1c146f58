/* The cpu device backend: host memory, and streams and events on CPU threads (see
 * fsdp/stream.h). The meta backend (meta.c) uses its host streams too.
 *
 * Every item queued on a stream, a task, a wait or a word's store, counts once in
 * `launched` and once in `completed` when it has run. An event is a (stream, count)
 * pair and its point is reached when the stream's completed count gets there. Counting
 * waits too makes an event recorded after a wait imply the waited-for point, as in CUDA.
 *
 * An event is used by the threads that record and wait on it one at a time (the
 * runtime's host thread); workers never read it: a wait copies its (stream, count)
 * when it is queued. An event holds a pointer to the stream it was last recorded on, so
 * it must not be queried or waited for once that stream is destroyed. */
#include "backend.h"

#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/error.h"
#include "fsdp/timer.h"
#include "fsdp/trace.h"

enum item_kind { TASK, WAIT_POINT, WAIT_WORD, WRITE_WORD };

struct item {
  struct item *next;
  enum item_kind kind;
  void (*fn)(void *arg);           /* TASK */
  struct queue *wait_on;           /* WAIT_POINT: the point (wait_on, wait_target) */
  uint64_t wait_target;
  struct stream_word *word;        /* WAIT_WORD until it reaches value; WRITE_WORD value into it */
  uint32_t value;
  char label[STREAM_LABEL_MAX];
  alignas(max_align_t) unsigned char arg[]; /* fn may read its argument as any type */
};

struct queue {
  int track;
  int kernel_track; /* a host stream's: its kernels' spans, one per launch */
  int is_host;
  pthread_t thread;
  /* mutex guards everything below; `queued` wakes the worker, `done` wakes anyone
   * waiting for `completed` to grow (synchronize, events, other streams' waits). */
  pthread_mutex_t mutex;
  pthread_cond_t queued, done;
  struct item *head, *tail;
  uint64_t launched, completed;
  int stopping;
  double busy_ms, blocked_ms;
};

struct point {
  struct queue *queue; /* NULL until recorded: complete */
  uint64_t target;
};

static int point_reached(struct queue *s, uint64_t target) {
  if (!s) return 1;
  pthread_mutex_lock(&s->mutex);
  int reached = s->completed >= target;
  pthread_mutex_unlock(&s->mutex);
  return reached;
}

static void wait_point(struct queue *s, uint64_t target) {
  if (!s) return;
  pthread_mutex_lock(&s->mutex);
  while (s->completed < target) pthread_cond_wait(&s->done, &s->mutex);
  pthread_mutex_unlock(&s->mutex);
}

/* Runs a task, in whichever thread executes s, and charges its time to s. */
static void run_task(struct queue *s, void (*fn)(void *), void *arg, const char *label) {
  int tracing = trace_enabled();
  double begin_us = tracing ? trace_now_us() : 0;
  double begin_ms = time_now_ms();
  fn(arg);
  double ms = time_now_ms() - begin_ms;
  if (tracing) trace_span(s->track, label, begin_us, trace_now_us());
  pthread_mutex_lock(&s->mutex);
  s->busy_ms += ms;
  pthread_mutex_unlock(&s->mutex);
}

static void *worker(void *arg) {
  struct queue *s = arg;
  pthread_mutex_lock(&s->mutex);
  for (;;) {
    while (!s->head && !s->stopping) pthread_cond_wait(&s->queued, &s->mutex);
    struct item *it = s->head;
    if (!it) break; /* stopping, and drained */
    s->head = it->next;
    if (!s->head) s->tail = NULL;
    /* Unlocked while it runs, so that the host can keep launching and a wait on this
     * very stream can read its count. */
    pthread_mutex_unlock(&s->mutex);
    switch (it->kind) {
      case TASK: run_task(s, it->fn, it->arg, it->label); break;
      case WAIT_POINT: wait_point(it->wait_on, it->wait_target); break;
      case WAIT_WORD: stream_word_wait(it->word, it->value); break;
      case WRITE_WORD: stream_word_store(it->word, it->value); break;
    }
    free(it);
    pthread_mutex_lock(&s->mutex);
    s->completed++;
    pthread_cond_broadcast(&s->done);
  }
  pthread_mutex_unlock(&s->mutex);
  return NULL;
}

static void *queue_create(struct stream *stream, int is_host) {
  struct queue *s = fsdp_xcalloc(1, sizeof *s);
  s->track = stream->track;
  s->is_host = is_host;
  if (is_host) {
    char name[sizeof stream->name + sizeof " kernels"];
    snprintf(name, sizeof name, "%s kernels", stream->name);
    s->kernel_track = trace_track(name);
  }
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->queued, NULL);
  pthread_cond_init(&s->done, NULL);
  if (!is_host) {
    int rc = pthread_create(&s->thread, NULL, worker, s);
    if (rc != 0) fsdp_fatal("stream '%s': cannot start its thread: %s", stream->name, strerror(rc));
  }
  return s;
}

static void queue_destroy(struct stream *stream) {
  struct queue *s = stream->impl;
  if (!s->is_host) {
    pthread_mutex_lock(&s->mutex);
    s->stopping = 1;
    pthread_cond_signal(&s->queued);
    pthread_mutex_unlock(&s->mutex);
    pthread_join(s->thread, NULL);
  }
  pthread_cond_destroy(&s->queued);
  pthread_cond_destroy(&s->done);
  pthread_mutex_destroy(&s->mutex);
  free(s);
}

static void enqueue(struct queue *s, struct item *it) {
  it->next = NULL;
  pthread_mutex_lock(&s->mutex);
  if (s->tail)
    s->tail->next = it;
  else
    s->head = it;
  s->tail = it;
  s->launched++;
  pthread_cond_signal(&s->queued);
  pthread_mutex_unlock(&s->mutex);
}

static void queue_launch(struct stream *stream, const char *label, void (*fn)(void *arg), const void *arg,
                         size_t arg_bytes) {
  struct queue *s = stream->impl;
  /* Host work is done before the call returns, so the host stream's counts stay at
   * zero and every event recorded on it is complete at once. The hooks mark each unit's
   * forward and backward on the stream's own track; its kernels go to a track of their
   * own beside it (where the CPU's time goes, kernel by kernel: fsdp traceviz). */
  if (s->is_host) {
    double begin_us = trace_enabled() ? trace_now_us() : 0;
    fn((void *)arg);
    if (trace_enabled()) trace_span(s->kernel_track, label, begin_us, trace_now_us());
    return;
  }
  struct item *it = fsdp_xmalloc(sizeof *it + arg_bytes);
  it->kind = TASK;
  it->fn = fn;
  snprintf(it->label, sizeof it->label, "%s", label);
  if (arg_bytes) memcpy(it->arg, arg, arg_bytes);
  enqueue(s, it);
}

/* The host stream's time blocked in waits (stream_get_times). */
static void add_blocked(struct queue *s, double ms) {
  pthread_mutex_lock(&s->mutex);
  s->blocked_ms += ms;
  pthread_mutex_unlock(&s->mutex);
}

static void queue_wait_event(struct stream *stream, struct event *e) {
  struct queue *s = stream->impl;
  struct point *p = e->impl;
  if (point_reached(p->queue, p->target)) return;
  if (s->is_host) {
    double begin_ms = time_now_ms();
    wait_point(p->queue, p->target);
    add_blocked(s, time_now_ms() - begin_ms);
    return;
  }
  struct item *it = fsdp_xcalloc(1, sizeof *it);
  it->kind = WAIT_POINT;
  it->wait_on = p->queue;
  it->wait_target = p->target;
  enqueue(s, it);
}

static void enqueue_word(struct queue *s, enum item_kind kind, struct stream_word *w, uint32_t value) {
  struct item *it = fsdp_xcalloc(1, sizeof *it);
  it->kind = kind;
  it->word = w;
  it->value = value;
  enqueue(s, it);
}

static void queue_write_word(struct stream *stream, struct stream_word *w, uint32_t value) {
  struct queue *s = stream->impl;
  if (s->is_host)
    stream_word_store(w, value);
  else
    enqueue_word(s, WRITE_WORD, w, value);
}

static void queue_wait_word(struct stream *stream, struct stream_word *w, uint32_t value) {
  struct queue *s = stream->impl;
  if (!s->is_host) {
    enqueue_word(s, WAIT_WORD, w, value);
    return;
  }
  double begin_ms = time_now_ms();
  stream_word_wait(w, value);
  add_blocked(s, time_now_ms() - begin_ms);
}

static void queue_synchronize(struct stream *stream) {
  struct queue *s = stream->impl;
  pthread_mutex_lock(&s->mutex);
  uint64_t target = s->launched;
  pthread_mutex_unlock(&s->mutex);
  wait_point(s, target);
}

static void queue_times(struct stream *stream, struct stream_times *out, int reset) {
  struct queue *s = stream->impl;
  pthread_mutex_lock(&s->mutex);
  out->busy_ms = s->busy_ms;
  out->blocked_ms = s->blocked_ms;
  if (reset) s->busy_ms = s->blocked_ms = 0;
  pthread_mutex_unlock(&s->mutex);
}

static void *point_create(struct device *d) {
  (void)d;
  return fsdp_xcalloc(1, sizeof(struct point));
}

static void point_destroy(struct event *e) { free(e->impl); }

static void point_record(struct event *e, struct stream *stream) {
  struct queue *s = stream->impl;
  struct point *p = e->impl;
  pthread_mutex_lock(&s->mutex);
  p->target = s->launched;
  pthread_mutex_unlock(&s->mutex);
  p->queue = s;
}

static int point_query(const struct event *e) {
  const struct point *p = e->impl;
  return point_reached(p->queue, p->target);
}

static void point_synchronize(struct event *e) {
  struct point *p = e->impl;
  wait_point(p->queue, p->target);
}

/* Host memory, 64-byte aligned for the vector loops. */
static void *host_alloc(struct device *d, size_t bytes) {
  (void)d;
  void *ptr = NULL;
  return posix_memalign(&ptr, 64, bytes) == 0 ? ptr : NULL;
}

static void host_free(struct device *d, void *ptr, size_t bytes) {
  (void)d;
  (void)bytes;
  free(ptr);
}

static void *pinned_alloc(size_t bytes) { return host_alloc(NULL, bytes); }
static void pinned_free(void *ptr) { free(ptr); }

_Atomic uint32_t *host_word_alloc(struct device *d, void **impl) {
  (void)d;
  *impl = NULL;
  return fsdp_xmalloc(sizeof(_Atomic uint32_t));
}

void host_word_free(struct device *d, _Atomic uint32_t *host, void *impl) {
  (void)d;
  (void)impl;
  free((void *)host);
}

/* What a copy or memset launched on a worker stream needs. */
struct host_copy {
  void *dst;
  const void *src;
  int byte;
  size_t bytes;
};

static void copy_task(void *arg) {
  const struct host_copy *c = arg;
  memcpy(c->dst, c->src, c->bytes);
}

static void memset_task(void *arg) {
  const struct host_copy *c = arg;
  memset(c->dst, c->byte, c->bytes);
}

static void host_copy(struct stream *s, void *dst, const void *src, size_t bytes, int to_device, int from_device) {
  (void)to_device;
  (void)from_device;
  if (s->is_host) {
    memcpy(dst, src, bytes);
    return;
  }
  struct host_copy c = {dst, src, 0, bytes};
  queue_launch(s, "copy", copy_task, &c, sizeof c);
}

static void host_memset(struct stream *s, void *dst, int byte, size_t bytes) {
  if (s->is_host) {
    memset(dst, byte, bytes);
    return;
  }
  struct host_copy c = {dst, NULL, byte, bytes};
  queue_launch(s, "memset", memset_task, &c, sizeof c);
}

const struct device_backend CPU_BACKEND = {
    .name = "cpu",
    .kind = DEVICE_CPU,
    .computes = 1,
    .raw_alloc = host_alloc,
    .raw_free = host_free,
    .pinned_alloc = pinned_alloc,
    .pinned_free = pinned_free,
    .stream_create = queue_create,
    .stream_destroy = queue_destroy,
    .stream_launch = queue_launch,
    .stream_wait_event = queue_wait_event,
    .stream_synchronize = queue_synchronize,
    .stream_times = queue_times,
    .event_create = point_create,
    .event_destroy = point_destroy,
    .event_record = point_record,
    .event_query = point_query,
    .event_synchronize = point_synchronize,
    .copy = host_copy,
    .memset = host_memset,
    .word_alloc = host_word_alloc,
    .word_free = host_word_free,
    .stream_write_word = queue_write_word,
    .stream_wait_word = queue_wait_word,
};
