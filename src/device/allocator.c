/* The stream-ordered caching allocator of every device (see fsdp/device.h).
 *
 * A request is rounded up to its size class; a freed block goes onto the device's free
 * list with the stream of its last use and, when that stream is not the host's, an
 * event recorded there. A request takes a free block of its class: first one of the
 * same stream, else one whose event has been reached, else the first one, after making the
 * requesting stream wait for its event (so no block is ever handed out while work may
 * still use it, and the choice never depends on timing). Only when no block of the class
 * is free is the system asked, and when it has nothing left the cache is given back
 * and it is asked once more. Live blocks are found by address in a side table. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fsdp/error.h"

/* Up to 512 bytes one class; above, a size rounds up to an eighth of its power of two
 * (at least 512 bytes): a class wastes at most 12.5%, and sizes that recur step after
 * step (activations, gathered units) always land in the same class. */
static size_t size_class(size_t bytes) {
  enum { SMALL = 512 };
  if (bytes <= SMALL) return SMALL;
  size_t power = (size_t)1 << (63 - __builtin_clzll((unsigned long long)(bytes - 1)));
  size_t step = power / 8 > SMALL ? power / 8 : SMALL;
  return (bytes + step - 1) / step * step;
}

struct cached_block {
  struct cached_block *next;
  void *ptr;
  size_t size; /* its class */
  struct stream *stream;
  struct event *freed; /* recorded after the last use on stream; NULL when that was the host */
};

/* The side table: live blocks by address (open addressing, linear probing). Pinned
 * host blocks are there too, with size 0, counted on the cpu device. */
struct live_block {
  void *ptr;
  struct device *device;
  size_t bytes, size;
  enum mem_category category;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live_block *table;
static size_t table_capacity, table_count;

static size_t slot_of(const void *ptr, size_t capacity) {
  uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 17) & (capacity - 1);
}

static void table_put(struct live_block b);

static void table_grow(void) {
  struct live_block *old = table;
  size_t old_capacity = table_capacity;
  table_capacity = table_capacity ? 2 * table_capacity : 1024;
  table = fsdp_xcalloc(table_capacity, sizeof *table);
  table_count = 0;
  for (size_t i = 0; i < old_capacity; i++)
    if (old[i].ptr) table_put(old[i]);
  free(old);
}

static void table_put(struct live_block b) {
  if (2 * (table_count + 1) > table_capacity) table_grow();
  size_t i = slot_of(b.ptr, table_capacity);
  while (table[i].ptr) i = (i + 1) & (table_capacity - 1);
  table[i] = b;
  table_count++;
}

/* Removes and returns the entry of ptr; backward-shift deletion keeps probes unbroken. */
static int table_take(const void *ptr, struct live_block *out) {
  if (!table_capacity) return 0;
  size_t i = slot_of(ptr, table_capacity);
  while (table[i].ptr != ptr) {
    if (!table[i].ptr) return 0;
    i = (i + 1) & (table_capacity - 1);
  }
  *out = table[i];
  table[i].ptr = NULL;
  table_count--;
  for (size_t j = (i + 1) & (table_capacity - 1); table[j].ptr; j = (j + 1) & (table_capacity - 1)) {
    struct live_block moved = table[j];
    table[j].ptr = NULL;
    table_count--;
    table_put(moved);
  }
  return 1;
}

/* The free block of this class that s may take, unlinked, or NULL. */
static struct cached_block *take_cached(struct device *d, size_t size, struct stream *s) {
  struct cached_block **best = NULL;
  for (struct cached_block **p = &d->free_blocks; *p; p = &(*p)->next) {
    struct cached_block *b = *p;
    if (b->size != size) continue;
    if (b->stream == s || !b->freed || event_query(b->freed)) {
      best = p;
      break;
    }
    if (!best) best = p;
  }
  if (!best) return NULL;
  struct cached_block *b = *best;
  *best = b->next;
  return b;
}

static void release_cached(struct device *d, struct cached_block *b) {
  if (b->freed) {
    event_synchronize(b->freed);
    event_destroy(b->freed);
  }
  d->backend->raw_free(d, b->ptr, b->size);
  d->reserved_bytes -= b->size;
  free(b);
}

static void empty_cache_locked(struct device *d) {
  while (d->free_blocks) {
    struct cached_block *b = d->free_blocks;
    d->free_blocks = b->next;
    release_cached(d, b);
  }
}

void *device_alloc(struct device *d, size_t bytes, enum mem_category category, struct stream *s) {
  FSDP_CHECK(category >= 0 && category < MEM_NUM_CATEGORIES);
  if (bytes == 0) return NULL;
  size_t size = size_class(bytes);
  pthread_mutex_lock(&d->cache_lock);
  void *ptr = NULL;
  struct cached_block *b = take_cached(d, size, s);
  if (b) {
    /* A block freed on a host stream carries no event (device_free). Where that stream's
     * work may still be queued (cuda), another stream takes the block behind everything
     * launched on it so far, its last use among them. Few blocks change streams. */
    if (!b->freed && b->stream && b->stream != s && d->backend->host_stream_queues) {
      b->freed = event_create(d);
      event_record(b->freed, b->stream);
    }
    if (b->freed && b->stream != s) {
      /* The host stream of cpu and meta blocks the caller here; a device stream waits in order. */
      if (s) stream_wait_event(s, b->freed);
      else event_synchronize(b->freed);
    }
    if (b->freed) event_destroy(b->freed);
    ptr = b->ptr;
    free(b);
  } else {
    ptr = d->backend->raw_alloc(d, size);
    if (!ptr) {
      empty_cache_locked(d);
      ptr = d->backend->raw_alloc(d, size);
    }
    if (!ptr) {
      pthread_mutex_unlock(&d->cache_lock);
      fsdp_fatal("%s: out of memory allocating %zu bytes for %s (%zu bytes reserved)", d->backend->name, bytes,
                 mem_category_name(category), d->reserved_bytes);
    }
    d->reserved_bytes += size;
  }
  pthread_mutex_unlock(&d->cache_lock);
  pthread_mutex_lock(&table_lock);
  table_put((struct live_block){ptr, d, bytes, size, category});
  pthread_mutex_unlock(&table_lock);
  mem_account(d, bytes, category, +1);
  return ptr;
}

void device_free(struct device *d, void *ptr, struct stream *s) {
  if (!ptr) return;
  struct live_block live;
  pthread_mutex_lock(&table_lock);
  int found = table_take(ptr, &live);
  pthread_mutex_unlock(&table_lock);
  if (!found || live.device != d || live.size == 0)
    fsdp_fatal("device_free: %p is not a live block of device %s", ptr, device_name(d));
  mem_account(d, live.bytes, live.category, -1);
  struct cached_block *b = fsdp_xcalloc(1, sizeof *b);
  b->ptr = ptr;
  b->size = live.size;
  b->stream = s;
  if (s && !s->is_host) {
    b->freed = event_create(d);
    event_record(b->freed, s);
  }
  pthread_mutex_lock(&d->cache_lock);
  b->next = d->free_blocks;
  d->free_blocks = b;
  pthread_mutex_unlock(&d->cache_lock);
}

void allocator_forget_stream(struct device *d, struct stream *s) {
  pthread_mutex_lock(&d->cache_lock);
  for (struct cached_block *b = d->free_blocks; b; b = b->next) {
    if (b->stream != s) continue;
    if (b->freed) event_destroy(b->freed);
    b->freed = NULL;
    b->stream = NULL;
  }
  pthread_mutex_unlock(&d->cache_lock);
}

void device_empty_cache(struct device *d) {
  pthread_mutex_lock(&d->cache_lock);
  empty_cache_locked(d);
  pthread_mutex_unlock(&d->cache_lock);
}

size_t device_reserved_bytes(const struct device *d) {
  struct device *m = (struct device *)d;
  pthread_mutex_lock(&m->cache_lock);
  size_t bytes = m->reserved_bytes;
  pthread_mutex_unlock(&m->cache_lock);
  return bytes;
}

void *device_alloc_pinned(struct device *d, size_t bytes, enum mem_category category) {
  if (bytes == 0) return NULL;
  void *ptr = d->backend->pinned_alloc(bytes);
  if (!ptr) fsdp_fatal("%s: out of pinned host memory allocating %zu bytes", d->backend->name, bytes);
  pthread_mutex_lock(&table_lock);
  table_put((struct live_block){ptr, d, bytes, 0, category});
  pthread_mutex_unlock(&table_lock);
  mem_account(device_cpu(), bytes, category, +1);
  return ptr;
}

void device_free_pinned(struct device *d, void *ptr) {
  if (!ptr) return;
  struct live_block live;
  pthread_mutex_lock(&table_lock);
  int found = table_take(ptr, &live);
  pthread_mutex_unlock(&table_lock);
  if (!found || live.device != d || live.size != 0)
    fsdp_fatal("device_free_pinned: %p is not pinned memory of device %s", ptr, device_name(d));
  mem_account(device_cpu(), live.bytes, live.category, -1);
  d->backend->pinned_free(ptr);
}
