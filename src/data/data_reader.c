/* A window's tokens, read from its shard when a batch needs it, every id checked.
 *
 * Two ways (--data-io), measured against each other in docs/benchmarks.md ("Streamed
 * shards"): pread copies the window's T + 1 tokens into a small buffer, one system call a
 * window; mmap maps each shard read-only (MADV_RANDOM: a window's neighbours are not
 * the next to be read, so the kernel's read-ahead would be wasted) and converts from the
 * mapping. Pages of a file mapping count in the process's RSS for as long as they are
 * mapped, so after each window its pages are dropped (MADV_DONTNEED) — else a rank's RSS
 * would grow with every page it ever read, up to the data set. pread is the default: it
 * keeps RSS flat with no such care, costs one call where mmap costs the page faults and
 * the madvise, and was as fast or faster (docs/benchmarks.md). The page cache holds the
 * data either way, shared by the ranks of a machine. A shard that shrinks while it is
 * read ends the job naming it either way: pread comes up short, and a copy from the
 * mapping meets the bus error of a page past the file's end (mapped_copy.h); so does one
 * written to or replaced (its status change time and identity, checked at each window). */
#define _DEFAULT_SOURCE /* madvise's MADV_RANDOM and MADV_DONTNEED */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fsdp/data.h"
#include "fsdp/error.h"
#include "fsdp/input_file.h"
#include "mapped_copy.h"

/* A fault on a mapped shard maps more than the page asked for: the kernel maps the page
 * cache's neighbouring pages (fault-around) and whole large folios. Dropping the window's
 * own pages left those mapped, and a rank's RSS grew with the steps (+26% in 400 steps of
 * bench/data_shards.sh); the aligned 2 MiB around the window (a PMD folio's most) holds
 * them all. */
#define DROP_BLOCK ((size_t)2 << 20)

enum data_io data_io_parse(const char *name) {
  if (strcmp(name, "pread") == 0) return DATA_IO_PREAD;
  if (strcmp(name, "mmap") == 0) return DATA_IO_MMAP;
  fsdp_fatal("--data-io: unknown way '%s' (known: pread, mmap)", name);
}

void data_reader_init(struct data_reader *r, const struct data_set *set, enum data_io io, int vocab_size) {
  memset(r, 0, sizeof *r);
  r->set = set;
  r->io = io;
  r->vocab_size = vocab_size;
  for (int i = 0; i < DATA_READER_SLOTS; i++) r->slots[i] = (struct reader_slot){.shard = -1, .file.fd = -1};
}

static void close_slot(struct reader_slot *slot) {
  if (slot->map) munmap((void *)slot->map, slot->file.size);
  input_file_close(&slot->file);
  *slot = (struct reader_slot){.shard = -1, .file.fd = -1};
}

/* The shard's slot, opening it in the least recently used one. The file must still be
 * the one of the start, unchanged: the size its header was checked against, the same
 * file (not another put in its place), not written to since. */
static struct reader_slot *open_shard(struct data_reader *r, int shard) {
  struct reader_slot *slot = &r->slots[0];
  for (int i = 0; i < DATA_READER_SLOTS; i++) {
    if (r->slots[i].shard == shard) {
      r->slots[i].used = ++r->clock;
      return &r->slots[i];
    }
    if (r->slots[i].used < slot->used) slot = &r->slots[i];
  }
  close_slot(slot);
  const struct data_shard *s = &r->set->shards[shard];
  struct input_file f;
  input_file_open(&f, "token file", s->path);
  size_t expected = s->layout.offset + s->layout.n_tokens * (size_t)s->layout.width;
  if (f.size != expected)
    fsdp_fatal("token file '%s' changed while the job ran: %zu bytes now, %zu at the start", s->path, f.size,
               expected);
  data_shard_check_unchanged(s, f.fd);
  *slot = (struct reader_slot){.shard = shard, .file = f, .used = ++r->clock};
  if (r->io == DATA_IO_MMAP) {
    void *map = mmap(NULL, f.size, PROT_READ, MAP_SHARED, f.fd, 0);
    if (map == MAP_FAILED) fsdp_fatal("token file '%s': cannot map it: %s", s->path, strerror(errno));
    madvise(map, f.size, MADV_RANDOM);
    slot->map = map;
  }
  return slot;
}

static uint32_t little_endian(const unsigned char *b, int width) {
  if (width == 1) return b[0];
  if (width == 2) return (uint32_t)b[0] | (uint32_t)b[1] << 8;
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The window's ids into inputs and targets; where stands for the byte offset of id 0 in
 * the file (or its position, in memory). */
static void take_ids(const struct data_reader *r, const struct data_shard *s, const unsigned char *bytes, size_t at,
                     int T, int *inputs, int *targets) {
  int width = s->layout.width;
  for (int t = 0; t <= T; t++) {
    uint32_t id = s->tokens ? token_at(s->tokens, width, at + (size_t)t) : little_endian(bytes + t * width, width);
    if (id >= (uint32_t)r->vocab_size) {
      if (s->tokens)
        fsdp_fatal("%s '%s': token id %u at position %zu is outside the vocabulary (vocab size %d)", r->set->flag,
                   s->path, id, at + (size_t)t, r->vocab_size);
      fsdp_fatal("token file '%s': token id %u at byte offset %zu is outside the vocabulary (vocab size %d)",
                 s->path, id, at + (size_t)t * (size_t)width, r->vocab_size);
    }
    if (t < T) inputs[t] = (int)id;
    if (t > 0) targets[t - 1] = (int)id;
  }
}

void data_reader_window(struct data_reader *r, int shard, size_t first, int T, int *inputs, int *targets) {
  const struct data_shard *s = &r->set->shards[shard];
  FSDP_CHECK(T > 0 && first + (size_t)T < s->layout.n_tokens);
  if (s->tokens) {
    take_ids(r, s, NULL, first, T, inputs, targets);
    return;
  }
  size_t width = (size_t)s->layout.width, bytes = ((size_t)T + 1) * width, offset = s->layout.offset + first * width;
  struct reader_slot *slot = open_shard(r, shard);
  if (bytes > r->buffer_bytes) {
    free(r->buffer);
    r->buffer = fsdp_xmalloc(bytes);
    r->buffer_bytes = bytes;
  }
  if (r->io == DATA_IO_MMAP) {
    if (mapped_copy(r->buffer, slot->map + offset, bytes) != 0)
      fsdp_fatal("token file '%s' shrank while it was read (%zu bytes at its open; bytes %zu to %zu are gone from its "
                 "mapping, --data-io mmap)",
                 s->path, slot->file.size, offset, offset + bytes);
    size_t begin = offset / DROP_BLOCK * DROP_BLOCK, end = (offset + bytes + DROP_BLOCK - 1) / DROP_BLOCK * DROP_BLOCK;
    if (end > slot->file.size) end = slot->file.size;
    madvise((void *)(slot->map + begin), end - begin, MADV_DONTNEED);
  } else {
    input_file_read_at(&slot->file, "token file", r->buffer, bytes, offset);
  }
  /* After the read: a write before it has moved the status change time by now, so the
   * window is the start's bytes (a write after it is found at the next window). */
  data_shard_check_unchanged(s, slot->file.fd);
  take_ids(r, s, r->buffer, offset, T, inputs, targets);
}

void data_reader_free(struct data_reader *r) {
  for (int i = 0; i < DATA_READER_SLOTS; i++) close_slot(&r->slots[i]);
  free(r->buffer);
  memset(r, 0, sizeof *r);
}
