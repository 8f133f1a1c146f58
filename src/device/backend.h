/* Private to src/device: what a device backend implements (cpu.c, cuda.c, meta.c), and
 * the parts of a device, stream and event that every backend shares. A new backend
 * fills in a struct device_backend and is added to device_open. */
#ifndef FSDP_DEVICE_BACKEND_H
#define FSDP_DEVICE_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fsdp/device.h"
#include "fsdp/trace.h"

struct cached_block;

struct device_backend {
  const char *name;
  enum device_kind kind;
  int computes; /* 0: launches are dropped (meta) */
  /* 1: work launched on a host stream may still be queued when its launch returns (cuda:
   * a GPU stream of its own); 0: it is done by then (cpu, meta). */
  int host_stream_queues;
  /* Where the device is (device_location); NULL: "". */
  void (*location)(struct device *d, char *out, size_t size);
  /* What the device is (device_model); NULL: "". */
  void (*model)(struct device *d, char *out, size_t size);
  /* Memory from the system; NULL when there is none left. */
  void *(*raw_alloc)(struct device *d, size_t bytes);
  void (*raw_free)(struct device *d, void *ptr, size_t bytes);
  void *(*pinned_alloc)(size_t bytes);
  void (*pinned_free)(void *ptr);

  /* Streams: impl is the backend's own state. */
  void *(*stream_create)(struct stream *s, int host);
  void (*stream_destroy)(struct stream *s);
  void (*stream_launch)(struct stream *s, const char *label, void (*fn)(void *), const void *arg, size_t bytes);
  void (*stream_wait_event)(struct stream *s, struct event *e);
  void (*stream_synchronize)(struct stream *s);
  void (*stream_times)(struct stream *s, struct stream_times *out, int reset);

  void *(*event_create)(struct device *d);
  void (*event_destroy)(struct event *e);
  void (*event_record)(struct event *e, struct stream *s);
  int (*event_query)(const struct event *e);
  void (*event_synchronize)(struct event *e);

  void (*copy)(struct stream *s, void *dst, const void *src, size_t bytes, int to_device, int from_device);
  void (*memset)(struct stream *s, void *dst, int byte, size_t bytes);

  /* Stream words (fsdp/stream.h): host memory the device's streams can reach, and impl
   * whatever the backend needs to reach it (the device's address on cuda). */
  _Atomic uint32_t *(*word_alloc)(struct device *d, void **impl);
  void (*word_free)(struct device *d, _Atomic uint32_t *host, void *impl);
  void (*stream_write_word)(struct stream *s, struct stream_word *w, uint32_t value);
  void (*stream_wait_word)(struct stream *s, struct stream_word *w, uint32_t value);
};

struct mem_tracker {
  pthread_mutex_t lock;
  struct mem_stats stats;
};

struct device {
  const struct device_backend *backend;
  enum device_kind target;
  int ordinal;
  void *impl;
  struct mem_tracker tracker;
  /* The caching allocator (allocator.c), under its own lock. */
  pthread_mutex_t cache_lock;
  struct cached_block *free_blocks;
  size_t reserved_bytes;
  atomic_size_t host_waits; /* device_host_waits */
};

struct stream {
  struct device *device;
  char name[TRACE_NAME_MAX];
  int track;
  int is_host;
  void *impl;
};

struct event {
  struct device *device;
  void *impl;
};

struct stream_word {
  struct device *device;
  _Atomic uint32_t *host;
  void *impl;
};

extern const struct device_backend CPU_BACKEND, META_BACKEND;
/* Stream words in plain host memory (cpu.c), for the backends whose streams run on the host. */
_Atomic uint32_t *host_word_alloc(struct device *d, void **impl);
void host_word_free(struct device *d, _Atomic uint32_t *host, void *impl);
/* A device over any backend: device_open's, and tests' own (a fake that models another
 * device's synchronization over the cpu backend). */
struct device *device_open_backend(const struct device_backend *backend, enum device_kind target);
/* NULL in a build without CUDA. */
const struct device_backend *cuda_backend(void);
/* 0 when the process sees no GPU; the message says why. */
int cuda_device_available(char *why, size_t why_size);
/* Where there is one: the compute capability of this rank's GPU and the shared memory a
 * block may opt in to (1); 0 in a build without CUDA. */
int cuda_device_capability(int *major, int *minor, size_t *smem_optin);

/* Before a stream of d is destroyed, with its work done: its cached blocks become the
 * host's, free for any stream (allocator.c). */
void allocator_forget_stream(struct device *d, struct stream *s);

/* The accounting of one allocation (+1) or free (-1) of a block (memory.c). */
void mem_account(struct device *d, size_t bytes, enum mem_category category, int sign);

#endif
