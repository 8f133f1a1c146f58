/* The caching allocator and the accounting of src/device: blocks reused by size class,
 * stream order kept when a block changes streams, bytes by category, the meta device.
 * `allocator_test bad-free` frees an address no device handed out (it must end the job). */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fsdp/device.h"
#include "fsdp/stream.h"

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Sleeps, then stores a value: work that is still pending for a while. */
struct late_store {
  int *dst, value;
};
static void late_store_task(void *arg) {
  const struct late_store *t = arg;
  sleep_ms(100);
  *t->dst = t->value;
}

struct load {
  const int *src;
  int *dst;
};
static void load_task(void *arg) {
  const struct load *t = arg;
  *t->dst = *t->src;
}

static size_t current(struct device *d, enum mem_category c) {
  struct mem_stats s;
  device_memory_stats(d, &s);
  return s.current[c];
}

static void test_reuse_and_accounting(void) {
  struct device *cpu = device_cpu();
  size_t reserved = device_reserved_bytes(cpu);
  void *a = device_alloc(cpu, 1000, MEM_ACTIVATIONS, NULL);
  EXPECT(current(cpu, MEM_ACTIVATIONS) == 1000, "%zu activation bytes", current(cpu, MEM_ACTIVATIONS));
  EXPECT(device_reserved_bytes(cpu) == reserved + 1024, "1000 bytes reserve their class, 1024");
  device_free(cpu, a, NULL);
  CHECK(current(cpu, MEM_ACTIVATIONS) == 0);
  /* The same class: the cached block comes back, and the system is not asked again. */
  void *b = device_alloc(cpu, 1010, MEM_COMM, NULL);
  CHECK(b == a);
  CHECK(current(cpu, MEM_COMM) == 1010);
  CHECK(device_reserved_bytes(cpu) == reserved + 1024);
  /* Another class: a block of its own. */
  void *c = device_alloc(cpu, 5000, MEM_COMM, NULL);
  CHECK(c != b);
  struct mem_stats s;
  device_memory_stats(cpu, &s);
  CHECK(s.peak[MEM_COMM] == 6010 && s.total_current >= 6010);
  device_free(cpu, b, NULL);
  device_free(cpu, c, NULL);
  device_reset_peaks(cpu);
  device_memory_stats(cpu, &s);
  CHECK(s.peak[MEM_COMM] == 0);
  CHECK(device_alloc(cpu, 0, MEM_OTHER, NULL) == NULL);
  device_free(cpu, NULL, NULL);
  device_empty_cache(cpu);
  CHECK(device_reserved_bytes(cpu) == reserved);
}

/* A block freed after work launched on stream a is still pending goes to stream b only
 * behind that work: b's next task sees what a's wrote. */
/* A block of `bytes` allocated for stream a, whose value a's pending work sets to
 * `value` a while after the block has been freed. */
static int *freed_behind_pending_store(struct stream *a, size_t bytes, int value, struct late_store *store) {
  int *x = device_alloc(device_cpu(), bytes, MEM_ACTIVATIONS, a);
  *x = 0;
  *store = (struct late_store){x, value};
  stream_launch(a, "late store", late_store_task, store, sizeof *store);
  device_free(device_cpu(), x, a);
  return x;
}

/* A block freed after work launched on stream a is still pending goes to stream b only
 * behind that work: b's next task sees what a's wrote. The host takes one only once
 * a's work is done. */
static void test_cross_stream(void) {
  struct device *cpu = device_cpu();
  struct stream *a = device_stream_create(cpu, "alloc-a"), *b = device_stream_create(cpu, "alloc-b");
  struct late_store store;
  int *x = freed_behind_pending_store(a, 3000, 42, &store);
  int *y = device_alloc(cpu, 3000, MEM_ACTIVATIONS, b);
  CHECK(y == x);
  int seen = -1;
  struct load load = {y, &seen};
  stream_launch(b, "load", load_task, &load, sizeof load);
  stream_synchronize(b);
  EXPECT(seen == 42, "stream b read %d before stream a's store of 42", seen);
  device_free(cpu, y, b);

  int *z = freed_behind_pending_store(a, 7000, 7, &store);
  int *w = device_alloc(cpu, 7000, MEM_ACTIVATIONS, NULL);
  CHECK(w == z);
  EXPECT(*w == 7, "the host was given the block with stream a's store still pending (%d)", *w);
  device_free(cpu, w, NULL);
  stream_synchronize(a);
  stream_destroy(a);
  stream_destroy(b);
  device_empty_cache(cpu);
}

static void set_task(void *arg) { **(int **)arg = 1; }

/* The meta device counts what it hands out and runs nothing. */
static void test_meta(void) {
  struct device *meta = device_open(DEVICE_META, DEVICE_CPU);
  CHECK(!device_computes(meta) && device_kind(meta) == DEVICE_META && device_target(meta) == DEVICE_CPU);
  size_t tib = (size_t)1 << 40;
  void *huge = device_alloc(meta, tib, MEM_SHARDED_PARAMS, NULL);
  CHECK(huge != NULL);
  CHECK(current(meta, MEM_SHARDED_PARAMS) == tib);
  CHECK(current(device_cpu(), MEM_SHARDED_PARAMS) == 0);
  struct stream *s = device_stream_create(meta, "meta");
  int ran = 0;
  stream_launch(s, "set", set_task, &(int *){&ran}, sizeof(int *));
  device_memset(s, huge, 0xff, tib);
  struct event *e = event_create(meta);
  event_record(e, s);
  CHECK(event_query(e));
  stream_synchronize(s);
  CHECK(ran == 0);
  device_free(meta, huge, s);
  CHECK(current(meta, MEM_SHARDED_PARAMS) == 0);
  event_destroy(e);
  stream_destroy(s);
  device_close(meta);
}

int main(int argc, char **argv) {
  alarm(120); /* a missed wakeup fails the test instead of hanging it */
  if (argc == 2 && strcmp(argv[1], "bad-free") == 0) {
    int not_a_block;
    device_free(device_cpu(), &not_a_block, NULL);
    return 0;
  }
  test_reuse_and_accounting();
  test_cross_stream();
  test_meta();
  return check_summary("allocator_test");
}
