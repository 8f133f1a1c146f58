/* Streams and events on CPU threads, with real worker threads: order on a stream,
 * waits across streams and on the host, the marks events make, stream words, draining
 * on destroy, the time accounting and the trace spans. Run it under ThreadSanitizer too. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fsdp/device.h"
#include "fsdp/stream.h"
#include "fsdp/trace.h"

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* A gate that a task waits at until the test opens it: it keeps work pending for
 * as long as a check needs, without relying on timing. */
struct gate {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int open;
};

static void gate_init(struct gate *g) {
  pthread_mutex_init(&g->mutex, NULL);
  pthread_cond_init(&g->cond, NULL);
  g->open = 0;
}

static void gate_set(struct gate *g, int open) {
  pthread_mutex_lock(&g->mutex);
  g->open = open;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->mutex);
}

static void gate_destroy(struct gate *g) {
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->mutex);
}

static void gate_task(void *arg) {
  struct gate *g = *(struct gate **)arg;
  pthread_mutex_lock(&g->mutex);
  while (!g->open) pthread_cond_wait(&g->cond, &g->mutex);
  pthread_mutex_unlock(&g->mutex);
}

static void launch_gate(struct stream *s, struct gate *g) { stream_launch(s, "gate", gate_task, &g, sizeof g); }

/* Appends a value to a list; only the stream's thread touches the list until the
 * test synchronizes. */
struct append {
  int *list, *len, value;
};

static void append_task(void *arg) {
  struct append *a = arg;
  a->list[(*a->len)++] = a->value;
}

/* Sleeps, then stores a value. */
struct sleep_store {
  int ms;
  int *dst, value;
};

static void sleep_store_task(void *arg) {
  struct sleep_store *t = arg;
  if (t->ms) sleep_ms(t->ms);
  *t->dst = t->value;
}

/* Copies *src to *dst. */
struct copy {
  const int *src;
  int *dst;
};

static void copy_task(void *arg) {
  struct copy *c = arg;
  *c->dst = *c->src;
}

static void test_fifo(void) {
  enum { N = 2000 };
  static int list[N];
  int len = 0;
  struct stream *s = device_stream_create(device_cpu(), "fifo");
  for (int i = 0; i < N; i++) {
    struct append a = {list, &len, i};
    stream_launch(s, "append", append_task, &a, sizeof a); /* a dies here: the stream copied it */
  }
  stream_synchronize(s);
  CHECK(len == N);
  int in_order = 1;
  for (int i = 0; i < N && i < len; i++) in_order &= list[i] == i;
  CHECK(in_order);
  stream_destroy(s);
}

static void test_cross_stream(void) {
  struct stream *a = device_stream_create(device_cpu(), "cross-a"), *b = device_stream_create(device_cpu(), "cross-b");
  struct event *e = event_create(device_cpu());
  int value = 0, seen = -1;
  struct sleep_store w = {20, &value, 42};
  stream_launch(a, "write", sleep_store_task, &w, sizeof w);
  event_record(e, a);
  stream_wait_event(b, e);
  struct copy c = {&value, &seen};
  stream_launch(b, "read", copy_task, &c, sizeof c);
  stream_synchronize(b);
  CHECK(seen == 42);
  stream_synchronize(a);
  event_destroy(e);
  stream_destroy(a);
  stream_destroy(b);
}

static void test_host_wait(void) {
  struct stream *host = device_host_stream_create(device_cpu(), "host-wait"), *a = device_stream_create(device_cpu(), "host-wait-a");
  struct event *e = event_create(device_cpu());
  int value = 0;
  struct stream_times t0, t1;
  stream_get_times(host, &t0);
  CHECK(t0.blocked_ms == 0);
  struct sleep_store w = {30, &value, 7};
  stream_launch(a, "write", sleep_store_task, &w, sizeof w);
  event_record(e, a);
  stream_wait_event(host, e);
  CHECK(value == 7); /* the wait returned only after the task ran */
  CHECK(event_query(e));
  stream_get_times(host, &t1);
  CHECK(t1.blocked_ms >= 20 && t1.blocked_ms < 5000);
  /* A reached point does not block. */
  stream_wait_event(host, e);
  stream_get_times(host, &t0);
  CHECK(t0.blocked_ms - t1.blocked_ms < 5);
  stream_reset_times(host);
  stream_get_times(host, &t0);
  CHECK(t0.blocked_ms == 0 && t0.busy_ms == 0);
  event_destroy(e);
  stream_destroy(a);
  stream_destroy(host);
}

/* Stream words: a stream parked on one until a host thread stores it; a stream's store
 * seen by a host thread after the work before it; host streams act at once; counts wrap. */
static void test_words(void) {
  struct stream *a = device_stream_create(device_cpu(), "words-a");
  struct stream *host = device_host_stream_create(device_cpu(), "words-host");
  struct stream_word *go = stream_word_create(device_cpu()), *passed = stream_word_create(device_cpu());
  int value = 0, seen = -1;
  stream_wait_word(a, go, 3);
  struct copy c = {&value, &seen};
  stream_launch(a, "read", copy_task, &c, sizeof c);
  stream_write_word(a, passed, 1);
  stream_word_store(go, 2);
  struct sleep_store w = {20, &value, 42};
  stream_launch(host, "write", sleep_store_task, &w, sizeof w);
  CHECK(stream_word_load(passed) == 0); /* 2 has not reached 3 */
  stream_word_store(go, 3);
  stream_word_wait(passed, 1);
  CHECK(seen == 42);
  stream_write_word(host, passed, 7);
  CHECK(stream_word_load(passed) == 7);
  stream_wait_word(host, passed, 6); /* reached: returns at once */
  CHECK(stream_word_reached(5, 5) && !stream_word_reached(4, 5));
  CHECK(stream_word_reached(0, 0xffffffffu) && !stream_word_reached(0xffffffffu, 0));
  stream_destroy(a);
  stream_destroy(host);
  stream_word_destroy(go);
  stream_word_destroy(passed);
}

static void test_query_and_rerecord(void) {
  struct stream *a = device_stream_create(device_cpu(), "query-a"), *b = device_stream_create(device_cpu(), "query-b");
  struct event *e = event_create(device_cpu());
  struct gate g;
  gate_init(&g);

  launch_gate(a, &g);
  event_record(e, a);
  CHECK(!event_query(e));
  sleep_ms(10);
  CHECK(!event_query(e)); /* still pending: the gate is shut */
  gate_set(&g, 1);
  event_synchronize(e);
  CHECK(event_query(e));

  /* Recording again moves the mark past new work, on the same or another stream. */
  gate_set(&g, 0);
  launch_gate(a, &g);
  CHECK(event_query(e)); /* the old mark is unaffected by work after it */
  event_record(e, a);
  CHECK(!event_query(e));
  gate_set(&g, 1);
  stream_synchronize(a);
  CHECK(event_query(e));

  gate_set(&g, 0);
  launch_gate(b, &g);
  event_record(e, b);
  CHECK(!event_query(e));
  gate_set(&g, 1);
  event_synchronize(e);
  CHECK(event_query(e));

  /* A wait on an event recorded on the same stream (already behind it) must not deadlock. */
  int value = 0, seen = -1;
  struct sleep_store w = {5, &value, 3};
  stream_launch(a, "write", sleep_store_task, &w, sizeof w);
  event_record(e, a);
  stream_wait_event(a, e);
  struct copy c = {&value, &seen};
  stream_launch(a, "read", copy_task, &c, sizeof c);
  stream_synchronize(a);
  CHECK(seen == 3);

  /* An event recorded after a wait implies the waited-for point, as in CUDA. */
  struct event *eb = event_create(device_cpu());
  gate_set(&g, 0);
  launch_gate(a, &g);
  event_record(e, a);
  stream_wait_event(b, e);
  event_record(eb, b);
  sleep_ms(10);
  CHECK(!event_query(eb));
  gate_set(&g, 1);
  event_synchronize(eb);
  CHECK(event_query(e));

  gate_destroy(&g);
  event_destroy(eb);
  event_destroy(e);
  stream_destroy(a);
  stream_destroy(b);
}

static void test_never_recorded_and_host_events(void) {
  struct stream *host = device_host_stream_create(device_cpu(), "events-host"), *a = device_stream_create(device_cpu(), "events-a");
  struct event *e = event_create(device_cpu());
  CHECK(event_query(e));
  event_synchronize(e);
  stream_wait_event(host, e);
  int value = 0;
  stream_wait_event(a, e);
  struct sleep_store w = {0, &value, 5};
  stream_launch(a, "write", sleep_store_task, &w, sizeof w);
  stream_synchronize(a);
  CHECK(value == 5);

  /* Host work runs in the caller, so its events are complete at once. */
  w.value = 6;
  stream_launch(host, "host write", sleep_store_task, &w, sizeof w);
  CHECK(value == 6);
  event_record(e, host);
  CHECK(event_query(e));
  stream_synchronize(host);
  event_destroy(e);
  stream_destroy(a);
  stream_destroy(host);
}

static void count_task(void *arg) {
  int *counter = *(int **)arg;
  sleep_ms(1);
  (*counter)++;
}

static void test_destroy_drains(void) {
  struct stream *s = device_stream_create(device_cpu(), "drain");
  int counter = 0, *p = &counter;
  for (int i = 0; i < 50; i++) stream_launch(s, "count", count_task, &p, sizeof p);
  stream_destroy(s); /* joins the thread, so counter is safe to read after */
  CHECK(counter == 50);
}

static void sleep_task(void *arg) { sleep_ms(*(int *)arg); }

static void test_busy_time(void) {
  struct stream *s = device_stream_create(device_cpu(), "busy");
  struct stream_times t;
  stream_get_times(s, &t);
  CHECK(t.busy_ms == 0 && t.blocked_ms == 0);
  int ms = 10;
  for (int i = 0; i < 5; i++) stream_launch(s, "sleep", sleep_task, &ms, sizeof ms);
  /* Reading the times while the worker adds to them is safe (ThreadSanitizer checks). */
  double last = 0;
  int monotonic = 1;
  for (int i = 0; i < 20; i++) {
    stream_get_times(s, &t);
    monotonic &= t.busy_ms >= last;
    last = t.busy_ms;
    sleep_ms(1);
  }
  CHECK(monotonic);
  stream_synchronize(s);
  stream_get_times(s, &t);
  CHECK(t.busy_ms >= 48 && t.busy_ms < 1000);
  /* Idle time is not busy time. */
  sleep_ms(30);
  struct stream_times later;
  stream_get_times(s, &later);
  CHECK(later.busy_ms == t.busy_ms);
  stream_reset_times(s);
  stream_get_times(s, &t);
  CHECK(t.busy_ms == 0);
  stream_destroy(s);
}

/* One link of a chain across streams: it must see the previous link's value. */
struct link {
  uint64_t *value;
  uint64_t expect, next;
  int *broken;
};

static void link_task(void *arg) {
  struct link *l = arg;
  if (*l->value != l->expect) (*l->broken)++;
  *l->value = l->next;
}

static void test_stress_chain(void) {
  enum { STREAMS = 3, LINKS = 6000 };
  struct stream *s[STREAMS];
  struct event *e[STREAMS];
  char name[32];
  for (int k = 0; k < STREAMS; k++) {
    snprintf(name, sizeof name, "chain-%d", k);
    s[k] = device_stream_create(device_cpu(), name);
    e[k] = event_create(device_cpu());
  }
  uint64_t value = 1, expect = 1;
  int broken = 0;
  for (int i = 0; i < LINKS; i++) {
    int k = i % STREAMS;
    /* Link i runs on stream k after link i-1, which ran on the stream before it. */
    if (i > 0) stream_wait_event(s[k], e[(k + STREAMS - 1) % STREAMS]);
    struct link l = {&value, expect, expect * 6364136223846793005u + (uint64_t)i, &broken};
    expect = l.next;
    stream_launch(s[k], "link", link_task, &l, sizeof l);
    event_record(e[k], s[k]);
  }
  event_synchronize(e[(LINKS - 1) % STREAMS]);
  CHECK(broken == 0);
  CHECK(value == expect);
  for (int k = 0; k < STREAMS; k++) {
    event_destroy(e[k]);
    stream_destroy(s[k]);
  }
}

static void nop_task(void *arg) { (void)arg; }
static void set_task(void *arg) { **(int **)arg = 1; }

static void test_trace(void) {
  trace_clear();
  trace_clock_start();
  trace_enable(1);
  struct stream *s = device_stream_create(device_cpu(), "trace-worker"), *host = device_host_stream_create(device_cpu(), "trace-host");
  stream_launch(s, "alpha", sleep_task, &(int){2}, sizeof(int));
  stream_launch(s, "beta", nop_task, NULL, 0);
  int gamma_ran = 0;
  stream_launch(host, "gamma", set_task, &(int *){&gamma_ran}, sizeof(int *));
  stream_synchronize(s);
  trace_enable(0);
  stream_launch(s, "not traced", nop_task, NULL, 0);
  stream_synchronize(s);

  size_t n;
  const struct trace_event *ev = trace_events(&n);
  int alpha = -1, beta = -1, gamma = -1, others = 0;
  for (size_t i = 0; i < n; i++) {
    if (ev[i].kind != TRACE_SPAN) continue;
    const char *track = trace_track_name(ev[i].track);
    if (!strcmp(ev[i].name, "alpha") && !strcmp(track, "trace-worker")) alpha = (int)i;
    else if (!strcmp(ev[i].name, "beta") && !strcmp(track, "trace-worker")) beta = (int)i;
    else if (!strcmp(ev[i].name, "gamma") && !strcmp(track, "trace-host kernels")) gamma = (int)i;
    else others++;
  }
  /* Work on the host stream runs inline and is a span of the stream's kernel track, not
   * of its own track: there the hooks mark the compute thread's forward and backward. */
  CHECK(alpha >= 0 && beta >= 0 && gamma >= 0 && gamma_ran);
  CHECK(others == 0);
  if (alpha >= 0 && beta >= 0) {
    CHECK(ev[alpha].dur_us >= 1500);
    CHECK(ev[beta].ts_us >= ev[alpha].ts_us + ev[alpha].dur_us);
  }
  stream_destroy(s);
  stream_destroy(host);
  trace_clear();
}

int main(void) {
  alarm(300); /* a deadlock fails the test instead of hanging it */
  test_fifo();
  test_cross_stream();
  test_host_wait();
  test_words();
  test_query_and_rerecord();
  test_never_recorded_and_host_events();
  test_destroy_drains();
  test_busy_time();
  test_stress_chain();
  test_trace();
  return check_summary("stream_test");
}
