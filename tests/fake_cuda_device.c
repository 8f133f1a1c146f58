/* A fake CUDA device (fake_cuda_device.h): the cpu backend's memory, streams and events,
 * behind the synchronization that CUDA documents and that the staged transport once
 * deadlocked on (collectives_cuda_w4 on the H200):
 *   - the driver serializes its calls on a context lock: every call here takes `context`,
 *     so a thread that calls in while another holds it waits, wherever it is;
 *   - cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost and cudaHostAlloc may
 *     synchronize the device, and a kernel's first launch loads its module, which does
 *     too: those calls wait, holding the lock, until every stream has run all its work;
 *   - a synchronize (stream or event) enters the driver, then waits without the lock;
 *     so does a host stream's wait, whose caller blocks.
 * Nothing is computed differently: a stream is a cpu stream, its work runs as on cpu. */
#include "fake_cuda_device.h"

#include <pthread.h>
#include <stdlib.h>

#include "backend.h"
#include "fsdp/error.h"

static pthread_mutex_t context = PTHREAD_MUTEX_INITIALIZER;

/* The device's worker streams, and the kernels launched so far (under `context`). */
enum { MAX_STREAMS = 64, MAX_KERNELS = 256 };
static struct stream *streams[MAX_STREAMS];
static int n_streams;
static void (*loaded[MAX_KERNELS])(void *);
static int n_loaded;

static void enter(void) { pthread_mutex_lock(&context); }
static void leave(void) { pthread_mutex_unlock(&context); }

/* Under `context`: every stream runs all it has been given. */
static void synchronize_device(void) {
  for (int i = 0; i < n_streams; i++) CPU_BACKEND.stream_synchronize(streams[i]);
}

static void *fake_alloc(struct device *d, size_t bytes) {
  enter();
  synchronize_device();
  void *ptr = CPU_BACKEND.raw_alloc(d, bytes);
  leave();
  return ptr;
}

static void fake_free(struct device *d, void *ptr, size_t bytes) {
  enter();
  synchronize_device();
  CPU_BACKEND.raw_free(d, ptr, bytes);
  leave();
}

static void *fake_pinned_alloc(size_t bytes) {
  enter();
  synchronize_device();
  void *ptr = CPU_BACKEND.pinned_alloc(bytes);
  leave();
  return ptr;
}

static void fake_pinned_free(void *ptr) {
  enter();
  synchronize_device();
  CPU_BACKEND.pinned_free(ptr);
  leave();
}

static _Atomic uint32_t *fake_word_alloc(struct device *d, void **impl) {
  enter();
  synchronize_device();
  _Atomic uint32_t *word = CPU_BACKEND.word_alloc(d, impl);
  leave();
  return word;
}

static void fake_word_free(struct device *d, _Atomic uint32_t *host, void *impl) {
  enter();
  synchronize_device();
  CPU_BACKEND.word_free(d, host, impl);
  leave();
}

static void *fake_stream_create(struct stream *s, int host) {
  enter();
  void *impl = CPU_BACKEND.stream_create(s, host);
  if (!host) {
    if (n_streams == MAX_STREAMS) fsdp_fatal("fake cuda device: more than %d streams", MAX_STREAMS);
    streams[n_streams++] = s;
  }
  leave();
  return impl;
}

static void fake_stream_destroy(struct stream *s) {
  enter();
  for (int i = 0; i < n_streams; i++)
    if (streams[i] == s) streams[i] = streams[--n_streams];
  leave();
  CPU_BACKEND.stream_destroy(s);
}

static int kernel_loaded(void (*fn)(void *)) {
  for (int i = 0; i < n_loaded; i++)
    if (loaded[i] == fn) return 1;
  return 0;
}

/* The launch only enqueues (a host stream's work runs after, on the caller's thread). */
static void fake_launch(struct stream *s, const char *label, void (*fn)(void *), const void *arg, size_t bytes) {
  enter();
  if (!kernel_loaded(fn)) {
    if (n_loaded == MAX_KERNELS) fsdp_fatal("fake cuda device: more than %d kernels", MAX_KERNELS);
    synchronize_device();
    loaded[n_loaded++] = fn;
  }
  leave();
  CPU_BACKEND.stream_launch(s, label, fn, arg, bytes);
}

static void fake_wait_event(struct stream *s, struct event *e) {
  enter();
  if (!s->is_host) CPU_BACKEND.stream_wait_event(s, e);
  leave();
  if (s->is_host) CPU_BACKEND.stream_wait_event(s, e);
}

static void fake_stream_synchronize(struct stream *s) {
  enter();
  leave();
  CPU_BACKEND.stream_synchronize(s);
}

/* The streams' clocks take no driver call. */
static void fake_stream_times(struct stream *s, struct stream_times *out, int reset) {
  CPU_BACKEND.stream_times(s, out, reset);
}

static void *fake_event_create(struct device *d) {
  enter();
  void *impl = CPU_BACKEND.event_create(d);
  leave();
  return impl;
}

static void fake_event_destroy(struct event *e) {
  enter();
  CPU_BACKEND.event_destroy(e);
  leave();
}

static void fake_event_record(struct event *e, struct stream *s) {
  enter();
  CPU_BACKEND.event_record(e, s);
  leave();
}

static int fake_event_query(const struct event *e) {
  enter();
  int reached = CPU_BACKEND.event_query(e);
  leave();
  return reached;
}

static void fake_event_synchronize(struct event *e) {
  enter();
  leave();
  CPU_BACKEND.event_synchronize(e);
}

static void fake_copy(struct stream *s, void *dst, const void *src, size_t bytes, int to_device, int from_device) {
  enter();
  CPU_BACKEND.copy(s, dst, src, bytes, to_device, from_device);
  leave();
}

static void fake_memset(struct stream *s, void *dst, int byte, size_t bytes) {
  enter();
  CPU_BACKEND.memset(s, dst, byte, bytes);
  leave();
}

static void fake_write_word(struct stream *s, struct stream_word *w, uint32_t value) {
  enter();
  CPU_BACKEND.stream_write_word(s, w, value);
  leave();
}

static void fake_wait_word(struct stream *s, struct stream_word *w, uint32_t value) {
  enter();
  if (!s->is_host) CPU_BACKEND.stream_wait_word(s, w, value);
  leave();
  if (s->is_host) CPU_BACKEND.stream_wait_word(s, w, value);
}

static const struct device_backend FAKE_CUDA_BACKEND = {
    .name = "fake-cuda",
    .kind = DEVICE_CPU,
    .computes = 1,
    .raw_alloc = fake_alloc,
    .raw_free = fake_free,
    .pinned_alloc = fake_pinned_alloc,
    .pinned_free = fake_pinned_free,
    .stream_create = fake_stream_create,
    .stream_destroy = fake_stream_destroy,
    .stream_launch = fake_launch,
    .stream_wait_event = fake_wait_event,
    .stream_synchronize = fake_stream_synchronize,
    .stream_times = fake_stream_times,
    .event_create = fake_event_create,
    .event_destroy = fake_event_destroy,
    .event_record = fake_event_record,
    .event_query = fake_event_query,
    .event_synchronize = fake_event_synchronize,
    .copy = fake_copy,
    .memset = fake_memset,
    .word_alloc = fake_word_alloc,
    .word_free = fake_word_free,
    .stream_write_word = fake_write_word,
    .stream_wait_word = fake_wait_word,
};

struct device *fake_cuda_device_open(void) { return device_open_backend(&FAKE_CUDA_BACKEND, DEVICE_CPU); }
