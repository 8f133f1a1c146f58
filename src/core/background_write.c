#include "fsdp/background_write.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/durable_file.h"
#include "fsdp/error.h"

struct background_write {
  pthread_t thread;
  char *path;
  const void *data;
  size_t bytes;
  int result;
  uint32_t crc;
  char why[1024];
  atomic_int done; /* set last: result, crc and why are final once it is seen */
};

static void *run(void *arg) {
  struct background_write *w = arg;
  w->result = durable_write(w->path, w->data, w->bytes, &w->crc, w->why, sizeof w->why);
  atomic_store_explicit(&w->done, 1, memory_order_release);
  return NULL;
}

struct background_write *background_write_start(const char *path, const void *data, size_t bytes) {
  struct background_write *w = fsdp_xcalloc(1, sizeof *w);
  w->path = strcpy(fsdp_xmalloc(strlen(path) + 1), path);
  w->data = data;
  w->bytes = bytes;
  atomic_init(&w->done, 0);
  int err = pthread_create(&w->thread, NULL, run, w);
  if (err != 0) fsdp_fatal("cannot start a thread to write '%s': %s", path, strerror(err));
  return w;
}

int background_write_done(struct background_write *w) {
  return atomic_load_explicit(&w->done, memory_order_acquire);
}

int background_write_finish(struct background_write *w, uint32_t *crc, char *why, size_t why_size) {
  int err = pthread_join(w->thread, NULL);
  if (err != 0) fsdp_fatal("cannot wait for the thread writing '%s': %s", w->path, strerror(err));
  int result = w->result;
  if (result == 0)
    *crc = w->crc;
  else
    snprintf(why, why_size, "%s", w->why);
  free(w->path);
  free(w);
  return result;
}
