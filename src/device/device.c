/* What every device shares: opening one, and the stream, event and copy calls, which go
 * to the device's backend. */
#include "fsdp/device.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "fsdp/error.h"

static const char *const KIND_NAMES[] = {[DEVICE_CPU] = "cpu", [DEVICE_CUDA] = "cuda", [DEVICE_META] = "meta"};

static void device_init(struct device *d, const struct device_backend *backend, enum device_kind target) {
  memset(d, 0, sizeof *d);
  d->backend = backend;
  d->target = target;
  pthread_mutex_init(&d->tracker.lock, NULL);
  pthread_mutex_init(&d->cache_lock, NULL);
}

static struct device cpu_device;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;
static void cpu_device_init(void) { device_init(&cpu_device, &CPU_BACKEND, DEVICE_CPU); }

struct device *device_cpu(void) {
  pthread_once(&cpu_once, cpu_device_init);
  return &cpu_device;
}

struct device *device_open(enum device_kind kind, enum device_kind target) {
  if (kind == DEVICE_CPU) return device_cpu();
  const struct device_backend *backend = &META_BACKEND;
  if (kind == DEVICE_CUDA) {
    backend = cuda_backend();
    if (!backend)
      fsdp_fatal("--device cuda: this fsdp was built without CUDA (configure with -DFSDP_CUDA=ON where nvcc is "
                 "installed)");
    char why[256];
    if (!cuda_device_available(why, sizeof why)) fsdp_fatal("--device cuda: no GPU can be used: %s", why);
    target = DEVICE_CUDA;
  } else if (target == DEVICE_META) {
    fsdp_fatal("a meta device plans for cpu or cuda, not for meta");
  }
  return device_open_backend(backend, target);
}

struct device *device_open_backend(const struct device_backend *backend, enum device_kind target) {
  struct device *d = fsdp_xmalloc(sizeof *d);
  device_init(d, backend, target);
  return d;
}

int device_cuda_available(char *why, size_t why_size) { return cuda_device_available(why, why_size); }

int device_cuda_capability(int *major, int *minor, size_t *smem_optin) {
  char why[256];
  return cuda_device_available(why, sizeof why) && cuda_device_capability(major, minor, smem_optin);
}

void device_close(struct device *d) {
  if (d == &cpu_device) return;
  device_empty_cache(d);
  pthread_mutex_destroy(&d->tracker.lock);
  pthread_mutex_destroy(&d->cache_lock);
  free(d);
}

enum device_kind device_kind(const struct device *d) { return d->backend->kind; }
enum device_kind device_target(const struct device *d) { return d->target; }
const char *device_name(const struct device *d) { return d->backend->name; }
int device_computes(const struct device *d) { return d->backend->computes; }

void device_location(const struct device *d, char *out, size_t size) {
  if (size) out[0] = '\0';
  if (d->backend->location) d->backend->location((struct device *)d, out, size);
}

void device_model(const struct device *d, char *out, size_t size) {
  if (size) out[0] = '\0';
  if (d->backend->model) d->backend->model((struct device *)d, out, size);
}

int device_kind_parse(const char *name) {
  for (int k = 0; k < (int)(sizeof KIND_NAMES / sizeof KIND_NAMES[0]); k++)
    if (strcmp(name, KIND_NAMES[k]) == 0) return k;
  return -1;
}

static struct stream *stream_new(struct device *d, const char *name, int host) {
  struct stream *s = fsdp_xcalloc(1, sizeof *s);
  s->device = d;
  snprintf(s->name, sizeof s->name, "%s", name);
  s->track = trace_track(s->name);
  s->is_host = host;
  s->impl = d->backend->stream_create(s, host);
  return s;
}

struct stream *device_stream_create(struct device *d, const char *name) { return stream_new(d, name, 0); }
struct stream *device_host_stream_create(struct device *d, const char *name) { return stream_new(d, name, 1); }

void stream_destroy(struct stream *s) {
  s->device->backend->stream_synchronize(s);
  allocator_forget_stream(s->device, s);
  s->device->backend->stream_destroy(s);
  free(s);
}

const char *stream_name(const struct stream *s) { return s->name; }
struct device *stream_device(const struct stream *s) { return s->device; }
int stream_is_host(const struct stream *s) { return s->is_host; }

void stream_launch(struct stream *s, const char *label, void (*fn)(void *arg), const void *arg, size_t arg_bytes) {
  if (!s->device->backend->computes) return;
  s->device->backend->stream_launch(s, label, fn, arg, arg_bytes);
}

/* Every cuda stream's impl is its cudaStream_t (cuda.c). */
void *stream_native_handle(const struct stream *s) {
  return s->device->backend->kind == DEVICE_CUDA ? s->impl : NULL;
}

static void check_same_device(const struct stream *s, const struct event *e) {
  if (s->device->backend != e->device->backend)
    fsdp_fatal("stream '%s' (%s) cannot wait for an event of device %s", s->name, s->device->backend->name,
               e->device->backend->name);
}

void stream_wait_event(struct stream *s, struct event *e) {
  check_same_device(s, e);
  s->device->backend->stream_wait_event(s, e);
}

void stream_synchronize(struct stream *s) {
  atomic_fetch_add(&s->device->host_waits, 1);
  s->device->backend->stream_synchronize(s);
}

size_t device_host_waits(const struct device *d) { return atomic_load(&((struct device *)d)->host_waits); }

void stream_get_times(struct stream *s, struct stream_times *out) { s->device->backend->stream_times(s, out, 0); }

void stream_reset_times(struct stream *s) {
  struct stream_times unused;
  s->device->backend->stream_times(s, &unused, 1);
}

struct event *event_create(struct device *d) {
  struct event *e = fsdp_xcalloc(1, sizeof *e);
  e->device = d;
  e->impl = d->backend->event_create(d);
  return e;
}

void event_destroy(struct event *e) {
  if (!e) return;
  e->device->backend->event_destroy(e);
  free(e);
}

void event_record(struct event *e, struct stream *s) {
  check_same_device(s, e);
  e->device->backend->event_record(e, s);
}

int event_query(const struct event *e) { return e->device->backend->event_query(e); }
void event_synchronize(struct event *e) {
  atomic_fetch_add(&e->device->host_waits, 1);
  e->device->backend->event_synchronize(e);
}

void device_copy_to_device(struct stream *s, void *dst, const void *host_src, size_t bytes) {
  if (bytes) s->device->backend->copy(s, dst, host_src, bytes, 1, 0);
}

void device_copy_to_host(struct stream *s, void *host_dst, const void *src, size_t bytes) {
  if (!bytes) return;
  atomic_fetch_add(&s->device->host_waits, 1);
  s->device->backend->copy(s, host_dst, src, bytes, 0, 1);
}

void device_copy(struct stream *s, void *dst, const void *src, size_t bytes) {
  if (bytes) s->device->backend->copy(s, dst, src, bytes, 1, 1);
}

void device_memset(struct stream *s, void *dst, int byte, size_t bytes) {
  if (bytes) s->device->backend->memset(s, dst, byte, bytes);
}

struct stream_word *stream_word_create(struct device *d) {
  struct stream_word *w = fsdp_xcalloc(1, sizeof *w);
  w->device = d;
  w->host = d->backend->word_alloc(d, &w->impl);
  atomic_store_explicit(w->host, 0, memory_order_release);
  return w;
}

void stream_word_destroy(struct stream_word *w) {
  if (!w) return;
  w->device->backend->word_free(w->device, w->host, w->impl);
  free(w);
}

static void check_word_device(const struct stream *s, const struct stream_word *w) {
  if (s->device != w->device)
    fsdp_fatal("stream '%s' (%s) cannot reach a word of device %s", s->name, s->device->backend->name,
               w->device->backend->name);
}

void stream_write_word(struct stream *s, struct stream_word *w, uint32_t value) {
  check_word_device(s, w);
  s->device->backend->stream_write_word(s, w, value);
}

void stream_wait_word(struct stream *s, struct stream_word *w, uint32_t value) {
  check_word_device(s, w);
  s->device->backend->stream_wait_word(s, w, value);
}

uint32_t stream_word_load(const struct stream_word *w) { return atomic_load_explicit(w->host, memory_order_acquire); }

void stream_word_store(struct stream_word *w, uint32_t value) {
  atomic_store_explicit(w->host, value, memory_order_release);
}

int stream_word_reached(uint32_t word, uint32_t value) { return (uint32_t)(word - value) < 0x80000000u; }

/* Spins briefly, then sleeps from 5 us doubling up to 1 ms, as the comm layer's MPI
 * waits do: the thread shares the cores with the compute thread and the other ranks. */
void stream_word_wait(const struct stream_word *w, uint32_t value) {
  enum { SPIN_POLLS = 64 };
  const long MAX_SLEEP_NS = 1000000;
  long sleep_ns = 5000;
  for (int polls = 0; !stream_word_reached(stream_word_load(w), value); polls++) {
    if (polls < SPIN_POLLS) continue;
    struct timespec pause = {0, sleep_ns};
    nanosleep(&pause, NULL);
    if (sleep_ns < MAX_SLEEP_NS) sleep_ns *= 2;
  }
}
