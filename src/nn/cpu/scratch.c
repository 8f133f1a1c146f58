/* The threads' scratch (cpu.h): two buffers per thread, each grown to the largest request
 * it has seen and kept, so that the kernels of a steady step allocate nothing; a pthread
 * key frees them when their thread ends (a stream's worker thread, say), which the
 * thread-local pointers alone would leak. */
#include <pthread.h>
#include <stdlib.h>

#include "cpu.h"

enum { SCRATCH_ALIGN = 64 };

/* The kernels' own (cpu_scratch) and the tile products' packed operands (cpu_pack_scratch). */
enum { KERNEL, PACK, SLOTS };

struct slot {
  void *data;
  size_t bytes;
};

static pthread_key_t owner;
static pthread_once_t owner_once = PTHREAD_ONCE_INIT;
static _Thread_local struct slot slots[SLOTS];

/* Runs as the thread ends, before its thread-locals go. */
static void free_slots(void *p) {
  struct slot *s = p;
  for (int i = 0; i < SLOTS; i++) free(s[i].data);
}

static void create_owner(void) {
  if (pthread_key_create(&owner, free_slots) != 0) fsdp_fatal("nn: cannot create the cpu kernels' scratch key");
}

static void *scratch_in(struct slot *s, size_t bytes) {
  if (bytes <= s->bytes) return s->data;
  pthread_once(&owner_once, create_owner);
  size_t size = (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
  void *data;
  if (posix_memalign(&data, SCRATCH_ALIGN, size) != 0)
    fsdp_fatal("nn: out of memory for %zu bytes of cpu kernel scratch", size);
  free(s->data);
  s->data = data;
  s->bytes = size;
  if (pthread_setspecific(owner, slots) != 0) fsdp_fatal("nn: cannot register the cpu kernels' scratch");
  return data;
}

void *cpu_scratch(size_t bytes) { return scratch_in(&slots[KERNEL], bytes); }

void *cpu_pack_scratch(size_t bytes) { return scratch_in(&slots[PACK], bytes); }
