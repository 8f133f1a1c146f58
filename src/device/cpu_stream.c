/* Streams and events on CPU threads (see fsdp/stream.h).
 *
 * Every item queued on a stream, a task or a wait, counts once in `launched` and
 * once in `completed` when it has run. An event is a (stream, count) pair and its
 * point is reached when the stream's completed count gets there. Counting waits too
 * makes an event recorded after a wait imply the waited-for point, as in CUDA.
 *
 * An event is used by the threads that record and wait on it one at a time (the
 * runtime's host thread); workers never read it: a wait copies its (stream, count)
 * when it is queued. An event holds a pointer to the stream it was last recorded on, so
 * it must not be queried or waited for once that stream is destroyed. */
#include "fsdp/stream.h"

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

struct item {
  struct item *next;
  void (*fn)(void *arg);           /* NULL for a wait */
  struct stream *wait_on;          /* a wait: the point (wait_on, wait_target) */
  uint64_t wait_target;
  char label[STREAM_LABEL_MAX];
  alignas(max_align_t) unsigned char arg[]; /* fn may read its argument as any type */
};

struct stream {
  char name[TRACE_NAME_MAX];
  int track;
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

struct event {
  struct stream *stream; /* NULL until recorded: complete */
  uint64_t target;
};

static int point_reached(struct stream *s, uint64_t target) {
  if (!s) return 1;
  pthread_mutex_lock(&s->mutex);
  int reached = s->completed >= target;
  pthread_mutex_unlock(&s->mutex);
  return reached;
}

static void wait_point(struct stream *s, uint64_t target) {
  if (!s) return;
  pthread_mutex_lock(&s->mutex);
  while (s->completed < target) pthread_cond_wait(&s->done, &s->mutex);
  pthread_mutex_unlock(&s->mutex);
}

/* Runs a task, in whichever thread executes s, and charges its time to s. */
static void run_task(struct stream *s, void (*fn)(void *), void *arg, const char *label) {
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
  struct stream *s = arg;
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
    if (it->fn)
      run_task(s, it->fn, it->arg, it->label);
    else
      wait_point(it->wait_on, it->wait_target);
    free(it);
    pthread_mutex_lock(&s->mutex);
    s->completed++;
    pthread_cond_broadcast(&s->done);
  }
  pthread_mutex_unlock(&s->mutex);
  return NULL;
}

static struct stream *new_stream(const char *name, int is_host) {
  struct stream *s = fsdp_xcalloc(1, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->track = trace_track(s->name);
  s->is_host = is_host;
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->queued, NULL);
  pthread_cond_init(&s->done, NULL);
  return s;
}

struct stream *stream_create(const char *name) {
  struct stream *s = new_stream(name, 0);
  int rc = pthread_create(&s->thread, NULL, worker, s);
  if (rc != 0) fsdp_fatal("stream '%s': cannot start its thread: %s", name, strerror(rc));
  return s;
}

struct stream *stream_create_host(const char *name) { return new_stream(name, 1); }

void stream_destroy(struct stream *s) {
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

const char *stream_name(const struct stream *s) { return s->name; }

static void enqueue(struct stream *s, struct item *it) {
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

void stream_launch(struct stream *s, const char *label, void (*fn)(void *arg), const void *arg, size_t arg_bytes) {
  /* Host work is done before the call returns, so the host stream's counts stay at
   * zero and every event recorded on it is complete at once. */
  if (s->is_host) {
    run_task(s, fn, (void *)arg, label);
    return;
  }
  struct item *it = fsdp_xmalloc(sizeof *it + arg_bytes);
  it->fn = fn;
  snprintf(it->label, sizeof it->label, "%s", label);
  if (arg_bytes) memcpy(it->arg, arg, arg_bytes);
  enqueue(s, it);
}

void stream_wait_event(struct stream *s, struct event *e) {
  if (point_reached(e->stream, e->target)) return;
  if (s->is_host) {
    double begin_ms = time_now_ms();
    wait_point(e->stream, e->target);
    double ms = time_now_ms() - begin_ms;
    pthread_mutex_lock(&s->mutex);
    s->blocked_ms += ms;
    pthread_mutex_unlock(&s->mutex);
    return;
  }
  struct item *it = fsdp_xmalloc(sizeof *it);
  it->fn = NULL;
  it->wait_on = e->stream;
  it->wait_target = e->target;
  enqueue(s, it);
}

void stream_synchronize(struct stream *s) {
  pthread_mutex_lock(&s->mutex);
  uint64_t target = s->launched;
  pthread_mutex_unlock(&s->mutex);
  wait_point(s, target);
}

struct event *event_create(void) { return fsdp_xcalloc(1, sizeof(struct event)); }

void event_destroy(struct event *e) { free(e); }

void event_record(struct event *e, struct stream *s) {
  pthread_mutex_lock(&s->mutex);
  e->target = s->launched;
  pthread_mutex_unlock(&s->mutex);
  e->stream = s;
}

int event_query(const struct event *e) { return point_reached(e->stream, e->target); }

void event_synchronize(struct event *e) { wait_point(e->stream, e->target); }

void stream_get_times(struct stream *s, struct stream_times *out) {
  pthread_mutex_lock(&s->mutex);
  out->busy_ms = s->busy_ms;
  out->blocked_ms = s->blocked_ms;
  pthread_mutex_unlock(&s->mutex);
}

void stream_reset_times(struct stream *s) {
  pthread_mutex_lock(&s->mutex);
  s->busy_ms = s->blocked_ms = 0;
  pthread_mutex_unlock(&s->mutex);
}
