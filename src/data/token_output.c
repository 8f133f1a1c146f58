#include "token_output.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "block_queue.h"
#include "fsdp/durable_file.h"
#include "fsdp/error.h"
#include "fsdp/file_commit.h"

enum { LLMC_HEADER_INTS = 256, BUFFER_TOKENS = 1 << 20 };
/* llm.c's header counts a file's tokens in an int32. */
#define MAX_FILE_TOKENS ((size_t)INT32_MAX)

struct token_buffer {
  unsigned char *bytes;
  size_t n; /* tokens */
};

struct out_file {
  char *name, *tmp;
  size_t tokens;
};

struct token_output {
  struct token_output_plan plan;
  int width; /* 2 or 4 */
  uint32_t magic, version;
  /* The encoding thread's side. */
  struct token_buffer *buffer;
  size_t count;
  struct block_queue *queue;
  pthread_t writer;
  int writer_running;
  /* The writer's side (the encoding thread's once it is joined). */
  struct out_file *files;
  int n_files, renamed;
  size_t files_cap;
  const char **names; /* token_output_finish's answer */
  int fd; /* of files[n_files - 1], or -1 */
  struct token_buffer *writing;
  int failed;
  char failure[sizeof ((struct fsdp_catch *)0)->message];
};

void token_output_abandon(struct token_output *o) {
  /* The writer stops at once, and creates no file after the removals. */
  if (o->writer_running && !pthread_equal(pthread_self(), o->writer)) {
    block_queue_abandon(o->queue);
    pthread_join(o->writer, NULL);
    o->writer_running = 0;
  }
  if (o->fd >= 0) close(o->fd);
  for (int i = o->renamed; i < o->n_files; i++) remove(o->files[i].tmp);
}

static struct token_buffer *buffer_new(const struct token_output *o) {
  struct token_buffer *b = fsdp_xcalloc(1, sizeof *b);
  b->bytes = fsdp_xmalloc((size_t)BUFFER_TOKENS * (size_t)o->width);
  return b;
}

static void buffer_free(struct token_buffer *b) {
  if (!b) return;
  free(b->bytes);
  free(b);
}

/* Tokens the current file (files[n_files - 1]) holds when it is complete. */
static size_t file_capacity(const struct token_output *o) {
  if (!o->plan.sharded) return MAX_FILE_TOKENS;
  return o->n_files == 1 && o->plan.val_tokens ? o->plan.val_tokens : o->plan.shard_tokens;
}

static void file_open(struct token_output *o) {
  o->files = fsdp_xgrow(o->files, &o->files_cap, (size_t)o->n_files + 1, sizeof *o->files, 16);
  struct out_file *f = &o->files[o->n_files];
  memset(f, 0, sizeof *f);
  if (o->plan.sharded) {
    const char *split = o->n_files == 0 && o->plan.val_tokens ? "val" : "train";
    size_t size = strlen(o->plan.output) + 32;
    f->name = fsdp_xmalloc(size);
    snprintf(f->name, size, "%s_%s_%06d.bin", o->plan.output, split, o->n_files);
  } else {
    f->name = strcpy(fsdp_xmalloc(strlen(o->plan.output) + 1), o->plan.output);
  }
  f->tmp = file_commit_temp_path(f->name);
  o->n_files++; /* counted before the create, so that the abort removes it */
  o->fd = file_commit_create(f->tmp);
  unsigned char header[LLMC_HEADER_INTS * 4] = {0}; /* the real one once the count is known */
  file_commit_write(o->fd, f->tmp, header, sizeof header);
}

/* The header with the count, then the file synced and closed: it waits, complete, for
 * its rename. */
static void file_close(struct token_output *o) {
  struct out_file *f = &o->files[o->n_files - 1];
  unsigned char header[LLMC_HEADER_INTS * 4] = {0};
  uint32_t fields[3] = {o->magic, o->version, (uint32_t)f->tokens};
  for (int k = 0; k < 3; k++)
    for (int b = 0; b < 4; b++) header[4 * k + b] = (unsigned char)(fields[k] >> (8 * b));
  file_commit_write_at(o->fd, f->tmp, header, sizeof header, 0);
  if (fsync(o->fd) != 0) fsdp_fatal("%s: cannot sync: %s", f->tmp, strerror(errno));
  int fd = o->fd;
  o->fd = -1;
  if (close(fd) != 0) fsdp_fatal("%s: cannot close: %s", f->tmp, strerror(errno));
}

/* n tokens to the files, a shard closed as it fills: shards hold exactly their count, a
 * document going on in the next one, as llm.c's fineweb.py cuts them. */
static void write_tokens(struct token_output *o, const unsigned char *bytes, size_t n) {
  while (n > 0) {
    if (o->fd < 0) file_open(o);
    struct out_file *f = &o->files[o->n_files - 1];
    size_t room = file_capacity(o) - f->tokens;
    if (!o->plan.sharded && n > room)
      fsdp_fatal("--output '%s': more than %zu tokens, which llm.c's header cannot count; give --output a prefix "
                 "instead of a .bin file to write shards", o->plan.output, MAX_FILE_TOKENS);
    size_t k = n < room ? n : room;
    file_commit_write(o->fd, f->tmp, bytes, k * (size_t)o->width);
    f->tokens += k;
    bytes += k * (size_t)o->width;
    n -= k;
    if (o->plan.sharded && f->tokens == file_capacity(o)) file_close(o);
  }
}

/* A failure (a full disk) is caught and kept, the queue abandoned so that the encoding
 * thread's next hand-over fails and it ends the job on its own thread. */
static void *writer_main(void *arg) {
  struct token_output *o = arg;
  struct fsdp_catch refused;
  if (setjmp(refused.jump) != 0) {
    memcpy(o->failure, refused.message, sizeof o->failure);
    o->failed = 1;
    block_queue_abandon(o->queue);
    return NULL;
  }
  fsdp_catch_set(&refused);
  for (struct token_buffer *b; (b = block_queue_pop(o->queue));) {
    o->writing = b; /* held where a failure leaves it reachable */
    write_tokens(o, b->bytes, b->n);
    o->writing = NULL;
    buffer_free(b);
  }
  fsdp_catch_set(NULL);
  return NULL;
}

struct token_output *token_output_open(const struct token_output_plan *plan) {
  FSDP_CHECK(!plan->sharded || (plan->shard_tokens >= 1 && plan->shard_tokens <= MAX_FILE_TOKENS &&
                                plan->val_tokens <= MAX_FILE_TOKENS));
  struct token_output *o = fsdp_xcalloc(1, sizeof *o);
  o->plan = *plan;
  o->width = plan->vocab_size <= 65536 ? 2 : 4;
  o->magic = o->width == 2 ? 20240520 : 20240801;
  o->version = o->width == 2 ? 1 : 7;
  o->fd = -1;
  file_open(o);
  o->buffer = buffer_new(o);
  o->queue = block_queue_create(plan->ahead > 0 ? plan->ahead : 1);
  if (pthread_create(&o->writer, NULL, writer_main, o) != 0) fsdp_fatal("cannot start a thread to write the output");
  o->writer_running = 1;
  return o;
}

static void hand_over(struct token_output *o) {
  if (!block_queue_push(o->queue, o->buffer)) {
    pthread_join(o->writer, NULL);
    o->writer_running = 0;
    fsdp_fatal("%s", o->failure);
  }
  o->buffer = buffer_new(o);
}

void token_output_ids(void *output, const uint32_t *ids, size_t n) {
  struct token_output *o = output;
  o->count += n;
  while (n > 0) {
    struct token_buffer *b = o->buffer;
    size_t k = BUFFER_TOKENS - b->n < n ? BUFFER_TOKENS - b->n : n;
    /* llm.c's files are little-endian. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (o->width == 2) {
      uint16_t *to = (uint16_t *)(void *)b->bytes + b->n;
      for (size_t i = 0; i < k; i++) to[i] = (uint16_t)ids[i];
    } else {
      memcpy(b->bytes + 4 * b->n, ids, 4 * k);
    }
#else
    for (size_t i = 0; i < k; i++)
      for (int byte = 0; byte < o->width; byte++)
        b->bytes[(b->n + i) * (size_t)o->width + (size_t)byte] = (unsigned char)(ids[i] >> (8 * byte));
#endif
    b->n += k;
    ids += k;
    n -= k;
    if (b->n == BUFFER_TOKENS) hand_over(o);
  }
}

size_t token_output_count(const struct token_output *o) { return o->count; }

int token_output_width(const struct token_output *o) { return o->width; }

int token_output_finish(struct token_output *o, const char *const **names) {
  if (o->buffer->n > 0) hand_over(o);
  buffer_free(o->buffer);
  o->buffer = NULL;
  block_queue_finish(o->queue, NULL);
  pthread_join(o->writer, NULL);
  o->writer_running = 0;
  if (o->failed) fsdp_fatal("%s", o->failure);
  if (o->fd >= 0) file_close(o);
  for (int i = 0; i < o->n_files; i++) {
    if (rename(o->files[i].tmp, o->files[i].name) != 0)
      fsdp_fatal("%s: cannot rename '%s' to it: %s", o->files[i].name, o->files[i].tmp, strerror(errno));
    o->renamed = i + 1;
  }
  char why[512];
  if (durable_sync_parent(o->files[0].name, why, sizeof why) != 0) fsdp_fatal("%s", why);
  o->names = fsdp_xcalloc((size_t)o->n_files, sizeof *o->names);
  for (int i = 0; i < o->n_files; i++) o->names[i] = o->files[i].name;
  *names = o->names;
  return o->n_files;
}

/* The index of a shard name "BASE_val_NNNNNN.bin" or "BASE_train_NNNNNN.bin" (six
 * digits or more), or -1; *val: which. */
static long shard_index(const char *name, const char *base, int *val) {
  size_t n = strlen(base);
  if (strncmp(name, base, n) != 0) return -1;
  name += n;
  *val = strncmp(name, "_val_", 5) == 0;
  if (!*val && strncmp(name, "_train_", 7) != 0) return -1;
  name += *val ? 5 : 7;
  size_t digits = strspn(name, "0123456789");
  if (digits < 6 || strcmp(name + digits, ".bin") != 0) return -1;
  return strtol(name, NULL, 10);
}

void token_output_warn_stale(const struct token_output *o) {
  if (!o->plan.sharded) return;
  const char *slash = strrchr(o->plan.output, '/');
  size_t dir_length = slash ? (size_t)(slash - o->plan.output) + 1 : 0;
  char *dir = fsdp_xmalloc(dir_length + 2);
  memcpy(dir, slash ? o->plan.output : ".", slash ? dir_length : 1);
  dir[slash ? dir_length : 1] = '\0';
  const char *base = slash ? slash + 1 : o->plan.output;
  DIR *d = opendir(dir);
  int stale = 0;
  char first[512] = "";
  for (struct dirent *e; d && (e = readdir(d));) {
    int val;
    long index = shard_index(e->d_name, base, &val);
    if (index < 0) continue;
    int written = index < o->n_files && val == (index == 0 && o->plan.val_tokens > 0);
    if (written) continue;
    if (stale++ == 0) snprintf(first, sizeof first, "%s%s", slash ? dir : "", e->d_name);
  }
  if (d) closedir(d);
  if (stale)
    fprintf(stderr, "tokenize: warning: %d shard%s under '%s' not written by this run (%s%s): remove %s before "
            "training on %s_train_*.bin\n", stale, stale == 1 ? "" : "s", o->plan.output, first,
            stale > 1 ? ", ..." : "", stale == 1 ? "it" : "them", o->plan.output);
  free(dir);
}

void token_output_free(struct token_output *o) {
  if (!o) return;
  for (int i = 0; i < o->n_files; i++) {
    free(o->files[i].name);
    free(o->files[i].tmp);
  }
  free(o->files);
  free(o->names);
  buffer_free(o->writing);
  block_queue_free(o->queue);
  free(o);
}
