/* The heap blocks a reader allocates, recorded through the sanitizer's allocation hooks
 * (which see every library, cJSON's and PCRE2's included), so that what a refused
 * reader abandoned can be freed: leaks on the refusal path are by design
 * (fsdp_fatal unwinds nothing), and left alone they would fill the memory of a long run
 * and hide the leaks of readers that succeed, which LeakSanitizer then reports.
 *
 * Only the reading thread's allocations are recorded: libFuzzer's own threads allocate
 * and free while a reader runs, and a block of theirs freed after the record stops would
 * be freed twice. A reader's block freed on any thread is struck off while the record
 * runs (the readers free none on another thread after it stops).
 *
 * A hook may not allocate: the record is a fixed open-addressing table of blocks (a
 * freed one leaves a tombstone) and the list of the slots used, renewed for each reader
 * by a generation number rather than cleared. A reader that allocates more blocks than
 * the table holds stops being recorded; what it abandons is then leaked, and said. */
#include <sanitizer/allocator_interface.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"

enum { SLOT_BITS = 20, SLOTS = 1 << SLOT_BITS, MAX_USED = SLOTS / 4 * 3 };

struct slot {
  const volatile void *block; /* NULL: freed since */
  uint32_t generation;        /* another generation's slot is empty */
};

static struct slot slots[SLOTS];
static uint32_t used[MAX_USED]; /* the slots taken in this generation, in order */
static size_t n_used;
static uint32_t generation;
static _Atomic int tracking;       /* frees are struck off */
static _Thread_local int recording; /* this thread's allocations are recorded */
static int overflowed;
static atomic_flag lock = ATOMIC_FLAG_INIT;

static size_t home_slot(const volatile void *block) {
  return (size_t)(((uintptr_t)block >> 4) * 0x9e3779b97f4a7c15ull >> (64 - SLOT_BITS));
}

static void take_lock(void) {
  while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) continue;
}
static void drop_lock(void) { atomic_flag_clear_explicit(&lock, memory_order_release); }

static void on_malloc(const volatile void *block, size_t size) {
  (void)size;
  if (!recording) return;
  take_lock();
  if (n_used == MAX_USED) {
    overflowed = 1;
  } else {
    size_t i = home_slot(block);
    while (slots[i].generation == generation) i = (i + 1) & (SLOTS - 1);
    slots[i] = (struct slot){block, generation};
    used[n_used++] = (uint32_t)i;
  }
  drop_lock();
}

static void on_free(const volatile void *block) {
  if (!atomic_load_explicit(&tracking, memory_order_relaxed)) return;
  take_lock();
  for (size_t i = home_slot(block); slots[i].generation == generation; i = (i + 1) & (SLOTS - 1))
    if (slots[i].block == block) {
      slots[i].block = NULL;
      break;
    }
  drop_lock();
}

void fuzz_heap_track(void) {
  static int installed;
  if (!installed && !__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free))
    fuzz_finding("cannot install the allocation hooks");
  installed = 1;
  if (++generation == 0) generation = 1; /* a zeroed slot is of generation 0: empty */
  n_used = 0;
  overflowed = 0;
  atomic_store(&tracking, 1);
  recording = 1;
}

void fuzz_heap_forget(void) {
  recording = 0;
  atomic_store(&tracking, 0);
}

void fuzz_heap_reclaim(void) {
  recording = 0;
  atomic_store(&tracking, 0);
  take_lock(); /* a hook still recording on another thread finishes first */
  drop_lock();
  for (size_t k = 0; k < n_used; k++) {
    struct slot *s = &slots[used[k]];
    if (s->block) free((void *)s->block);
    s->block = NULL;
  }
  if (overflowed) fprintf(stderr, "fuzz: a refused reader allocated more than %d blocks: some leaked\n", MAX_USED);
}
