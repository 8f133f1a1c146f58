/* The threads' scratch (cpu.h): one buffer per thread, grown to the largest request it
 * has seen and kept, so that the kernels of a steady step allocate nothing; a pthread key
 * frees it when its thread ends (a stream's worker thread, say), which the thread-local
 * pointer alone would leak. */
#include <pthread.h>
#include <stdlib.h>

#include "cpu.h"

enum { SCRATCH_ALIGN = 64 };

static pthread_key_t owner;
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;
static _Thread_local struct {
  void *data;
  size_t bytes;
} scratch;

static void create_owner(void) {
  if (pthread_key_create(&owner, free) != 0) fsdp_fatal("nn: cannot create the cpu kernels' scratch key");
}

void *cpu_scratch(size_t bytes) {
  if (bytes <= scratch.bytes) return scratch.data;
  pthread_once(&owner_once, create_owner);
  size_t size = (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
  void *data;
  if (posix_memalign(&data, SCRATCH_ALIGN, size) != 0)
    fsdp_fatal("nn: out of memory for %zu bytes of cpu kernel scratch", size);
  free(scratch.data);
  scratch.data = data;
  scratch.bytes = size;
  if (pthread_setspecific(owner, data) != 0) fsdp_fatal("nn: cannot register the cpu kernels' scratch");
  return data;
}
