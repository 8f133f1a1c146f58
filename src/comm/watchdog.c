/* The watchdog of comm.h's comm_set_timeout (see watchdog.h): a registry of the
 * operations in flight, oldest first, and the one monitor thread that reads it. */
#include "watchdog.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/timer.h"

/* NCCL's default: long enough for any collective of a healthy job. Atomic because
 * the monitor reads it while the caller may set it. */
static _Atomic double timeout_s = 600.0;

/* How often the monitor looks: a deadline is noticed this much late at most. */
static const long POLL_NS = 100 * 1000 * 1000;

struct watch_op {
  struct watch_op *prev, *next;
  double launched_ms;
  const struct stream_word *word; /* finished when it reaches value; NULL: by watch_finish */
  uint32_t value;
  char label[STREAM_LABEL_MAX];
  char call[STREAM_LABEL_MAX];
};

static struct {
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t wake;  /* the monitor's sleep, cut short by watch_stop */
  struct watch_op *head, *tail;
  pthread_t thread;
  int running, stopping;
  int quiet; /* watch_quiet: the monitor sleeps on, reading nothing */
} registry = {.lock = PTHREAD_MUTEX_INITIALIZER};

void comm_set_timeout(double seconds) {
  if (!(seconds > 0.0)) fsdp_fatal("comm_set_timeout: the timeout must be positive, got %g s", seconds);
  timeout_s = seconds;
}

double comm_timeout(void) { return timeout_s; }

static void append(struct watch_op *op) {
  pthread_mutex_lock(&registry.lock);
  op->prev = registry.tail;
  if (registry.tail)
    registry.tail->next = op;
  else
    registry.head = op;
  registry.tail = op;
  pthread_mutex_unlock(&registry.lock);
}

static void unlink_locked(struct watch_op *op) {
  if (op->prev)
    op->prev->next = op->next;
  else
    registry.head = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    registry.tail = op->prev;
  free(op);
}

static struct watch_op *new_op(const char *label, const char *call) {
  struct watch_op *op = fsdp_xcalloc(1, sizeof *op);
  op->launched_ms = time_now_ms();
  snprintf(op->label, sizeof op->label, "%s", label);
  snprintf(op->call, sizeof op->call, "%s", call);
  return op;
}

struct watch_op *watch_launch(const char *label, const char *call) {
  struct watch_op *op = new_op(label, call);
  append(op);
  return op;
}

void watch_finish(struct watch_op *op) {
  pthread_mutex_lock(&registry.lock);
  unlink_locked(op);
  pthread_mutex_unlock(&registry.lock);
}

void watch_launch_on_stream(const char *label, const char *call, const struct stream_word *word, uint32_t value) {
  struct watch_op *op = new_op(label, call);
  op->word = word;
  op->value = value;
  append(op);
}

static int finished_on_stream(const struct watch_op *op) {
  return op->word && stream_word_reached(stream_word_load(op->word), op->value);
}

void watch_forget(const struct stream_word *word) {
  pthread_mutex_lock(&registry.lock);
  const struct watch_op *newest = registry.tail;
  while (newest && newest->word != word) newest = newest->prev;
  int pending = newest != NULL;
  uint32_t value = pending ? newest->value : 0;
  pthread_mutex_unlock(&registry.lock);
  if (!pending) return;
  /* The stream reaches its words' values in launch order: the newest is the last. */
  stream_word_wait(word, value);
  pthread_mutex_lock(&registry.lock);
  for (struct watch_op *op = registry.head, *next; op; op = next) {
    next = op->next;
    if (op->word == word) unlink_locked(op);
  }
  pthread_mutex_unlock(&registry.lock);
}

/* Drops the operations their streams have finished; returns the oldest one still in
 * flight past the timeout, or NULL. */
static struct watch_op *sweep_locked(void) {
  double now = time_now_ms(), limit_ms = 1000.0 * timeout_s;
  struct watch_op *late = NULL;
  for (struct watch_op *op = registry.head, *next; op; op = next) {
    next = op->next;
    if (finished_on_stream(op))
      unlink_locked(op);
    else if (!late && now - op->launched_ms > limit_ms)
      late = op;
  }
  return late;
}

static _Noreturn void report(const char *label, const char *call, double seconds) {
  int named = strcmp(label, call) != 0;
  fsdp_fatal("%s%s%s%s has not finished after %g s (--comm-timeout): a rank of its group is stopped, dead or cut "
             "off from the network; ending the job",
             label, named ? " (" : "", named ? call : "", named ? ")" : "", seconds);
}

static void *monitor(void *arg) {
  (void)arg;
  pthread_mutex_lock(&registry.lock);
  while (!registry.stopping) {
    const struct watch_op *late = registry.quiet ? NULL : sweep_locked();
    if (late) {
      char label[STREAM_LABEL_MAX], call[STREAM_LABEL_MAX];
      memcpy(label, late->label, sizeof label);
      memcpy(call, late->call, sizeof call);
      pthread_mutex_unlock(&registry.lock);
      report(label, call, timeout_s);
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += POLL_NS;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&registry.wake, &registry.lock, &until);
  }
  pthread_mutex_unlock(&registry.lock);
  return NULL;
}

void watch_start(void) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&registry.wake, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_lock(&registry.lock);
  int rc = pthread_create(&registry.thread, NULL, monitor, NULL);
  registry.running = rc == 0;
  pthread_mutex_unlock(&registry.lock);
  if (rc != 0) fsdp_fatal("the comm watchdog: cannot start its thread: %s", strerror(rc));
}

/* The monitor sweeps holding the lock, and looks at `quiet` each time it takes it. It
 * keeps running (a thread that ended unjoined at the exit would be reported as leaked). */
void watch_quiet(void) {
  pthread_mutex_lock(&registry.lock);
  registry.quiet = 1;
  pthread_mutex_unlock(&registry.lock);
}

void watch_stop(void) {
  pthread_mutex_lock(&registry.lock);
  int running = registry.running;
  registry.running = 0;
  registry.stopping = 1;
  pthread_cond_signal(&registry.wake);
  pthread_mutex_unlock(&registry.lock);
  if (!running) return;
  pthread_join(registry.thread, NULL);
  pthread_cond_destroy(&registry.wake);
}
