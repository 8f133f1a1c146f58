/* The meta device backend: address ranges and no work. Its allocations are real in
 * the accounting (fsdp/memory.h) and in the caching allocator above it, so a step run
 * on it allocates and frees exactly what it would on the device it plans for; its
 * streams and events have nothing to wait for. */
#include <stdint.h>

#include "backend.h"
#include "fsdp/error.h"

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

static void *no_impl(struct stream *s, int host) {
  (void)s;
  (void)host;
  return NULL;
}
static void no_stream(struct stream *s) { (void)s; }
static void no_wait(struct stream *s, struct event *e) {
  (void)s;
  (void)e;
}
static void no_times(struct stream *s, struct stream_times *out, int reset) {
  (void)s;
  (void)reset;
  out->busy_ms = out->blocked_ms = 0;
}
static void *no_event(struct device *d) {
  (void)d;
  return NULL;
}
static void no_event_op(struct event *e) { (void)e; }
static void no_record(struct event *e, struct stream *s) {
  (void)e;
  (void)s;
}
static int reached(const struct event *e) {
  (void)e;
  return 1;
}
static void no_copy(struct stream *s, void *dst, const void *src, size_t bytes, int to_device, int from_device) {
  (void)s, (void)dst, (void)src, (void)bytes, (void)to_device, (void)from_device;
}
static void no_memset(struct stream *s, void *dst, int byte, size_t bytes) { (void)s, (void)dst, (void)byte, (void)bytes; }
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
    .stream_create = no_impl,
    .stream_destroy = no_stream,
    .stream_launch = NULL, /* stream_launch drops launches on devices that do not compute */
    .stream_wait_event = no_wait,
    .stream_synchronize = no_stream,
    .stream_times = no_times,
    .event_create = no_event,
    .event_destroy = no_event_op,
    .event_record = no_record,
    .event_query = reached,
    .event_synchronize = no_event_op,
    .copy = no_copy,
    .memset = no_memset,
    .word_alloc = host_word_alloc,
    .word_free = host_word_free,
    .stream_write_word = no_word_op,
    .stream_wait_word = no_word_op,
};
