#include "document_reader.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "block_queue.h"
#include "fsdp/error.h"
#include "jsonl_input.h"

enum { TEXT_BLOCK_BYTES = 1 << 20, JSONL_CHUNK_BYTES = 4 << 20 };

/* What the reading thread hands the parsers, numbered in the files' order: JSONL lines
 * to parse, or a text file's block read already, or the failure that stopped it. */
struct chunk {
  long seq;
  const char *path;
  char *lines;
  size_t n;
  long first_line;
  size_t file_bytes;
  struct document_block *block;
  char *failure;
};

struct document_reader {
  struct document_files files;
  struct block_queue *chunks; /* the reading thread -> the parsers */
  long next_seq;              /* the reading thread's */
  struct document_block *text_block; /* a text file's, being filled by the reading thread */
  pthread_t reader;
  pthread_t *parsers;
  int n_parsers;
  /* Parsed blocks wait here for their turn: blocks[seq % window]. */
  pthread_mutex_t lock;
  pthread_cond_t changed;
  struct document_block **blocks;
  long window;
  long next;  /* the seq the consumer takes next */
  long total; /* chunks in all, once the reading thread is done; else -1 */
  int stopping; /* the consumer met a failure: every thread ends, and is joined */
};

static struct document_block *block_new(size_t cap) {
  struct document_block *b = fsdp_xcalloc(1, sizeof *b);
  b->cap = cap ? cap : 1;
  b->text = fsdp_xmalloc(b->cap);
  return b;
}

void document_block_free(struct document_block *b) {
  if (!b) return;
  free(b->text);
  free(b->pieces);
  free(b->failure);
  free(b);
}

static struct document_piece *piece_new(struct document_block *b) {
  b->pieces = fsdp_xgrow(b->pieces, &b->pieces_cap, b->n_pieces + 1, sizeof *b->pieces, 256);
  b->pieces[b->n_pieces] = (struct document_piece){0, 0};
  return &b->pieces[b->n_pieces++];
}

/* A document sink (text_input.h) into a block. */
static void block_write(void *context, const void *text, size_t n) {
  struct document_block *b = context;
  if (n == 0) return;
  struct document_piece *last = b->n_pieces ? &b->pieces[b->n_pieces - 1] : NULL;
  if (!last || last->ends) last = piece_new(b);
  b->text = fsdp_xgrow(b->text, &b->cap, b->n + n, 1, TEXT_BLOCK_BYTES);
  memcpy(b->text + b->n, text, n);
  b->n += n;
  last->n += n;
}

static void block_end(void *context) {
  struct document_block *b = context;
  struct document_piece *last = b->n_pieces ? &b->pieces[b->n_pieces - 1] : NULL;
  /* A document whose text went with an earlier block ends with an empty piece here. */
  if (!last || last->ends) last = piece_new(b);
  last->ends = 1;
}

/* A chunk to the parsers; once the consumer stops the reading, the reading thread's
 * catch point takes it out of whatever file it was in. */
static void send(struct document_reader *r, struct chunk *c) {
  c->seq = r->next_seq++;
  if (!block_queue_push(r->chunks, c)) {
    free(c->lines);
    document_block_free(c->block);
    free(c->failure);
    free(c);
    fsdp_fatal("stopped");
  }
}

/* The reading thread's sink for text files: blocks of about a megabyte, sent as they fill. */
static void text_write(void *context, const void *text, size_t n) {
  struct document_reader *r = context;
  block_write(r->text_block, text, n);
  if (r->text_block->n < TEXT_BLOCK_BYTES) return;
  struct chunk *c = fsdp_xcalloc(1, sizeof *c);
  c->block = r->text_block;
  r->text_block = NULL; /* the chunk's now, even if send frees it */
  send(r, c);
  r->text_block = block_new(TEXT_BLOCK_BYTES);
}

static void text_end(void *context) { block_end(((struct document_reader *)context)->text_block); }

static void text_read(void *context, size_t file_bytes) {
  ((struct document_reader *)context)->text_block->file_bytes += file_bytes;
}

struct jsonl_context {
  struct document_reader *r;
  const char *path;
};

static void jsonl_chunk(void *context, char *lines, size_t n, long first_line, size_t file_bytes) {
  struct jsonl_context *j = context;
  struct chunk *c = fsdp_xcalloc(1, sizeof *c);
  *c = (struct chunk){.path = j->path, .lines = lines, .n = n, .first_line = first_line, .file_bytes = file_bytes};
  send(j->r, c);
}

/* Every file into chunks, sent in order; 0, or -1 with the failure (a file or its gzip
 * data refused) in refused->message. */
static int read_files(struct document_reader *r, struct fsdp_catch *refused) {
  if (setjmp(refused->jump) != 0) return -1;
  fsdp_catch_set(refused);
  r->text_block = block_new(TEXT_BLOCK_BYTES);
  struct document_sink text = {text_write, text_end, text_read, r};
  for (int i = 0; i < r->files.n; i++) {
    if (r->files.jsonl_key) {
      struct jsonl_context j = {r, r->files.paths[i]};
      jsonl_input_chunks("input", r->files.paths[i], JSONL_CHUNK_BYTES, jsonl_chunk, &j);
    } else {
      text_input_read("input", r->files.paths[i], r->files.sep, &text);
    }
  }
  struct chunk *c = fsdp_xcalloc(1, sizeof *c);
  c->block = r->text_block;
  r->text_block = NULL;
  send(r, c);
  fsdp_catch_set(NULL);
  return 0;
}

/* The failure as a chunk of its own, in turn; dropped if the consumer stopped meanwhile. */
static void send_failure(struct document_reader *r, const char *message) {
  struct chunk *c = fsdp_xcalloc(1, sizeof *c);
  c->failure = strcpy(fsdp_xmalloc(strlen(message) + 1), message);
  struct fsdp_catch stopped;
  if (setjmp(stopped.jump) == 0) {
    fsdp_catch_set(&stopped);
    send(r, c); /* frees c when stopped */
  }
  fsdp_catch_set(NULL);
}

/* The reading thread. Its failure is caught and sent as a chunk, so that it is raised in
 * turn, on the consumer's thread: exit() from this one would run the exit handlers while
 * the encoder's threads still encode. */
static void *reader_main(void *arg) {
  struct document_reader *r = arg;
  struct fsdp_catch refused;
  if (read_files(r, &refused) != 0) {
    document_block_free(r->text_block);
    r->text_block = NULL;
    send_failure(r, refused.message);
  }
  pthread_mutex_lock(&r->lock);
  r->total = r->next_seq;
  pthread_cond_broadcast(&r->changed);
  pthread_mutex_unlock(&r->lock);
  block_queue_finish(r->chunks, NULL);
  return NULL;
}

/* A chunk's lines parsed into a block; a refusal kept in it. */
static struct document_block *parse(const struct document_reader *r, struct chunk *c) {
  struct document_block *b = block_new(c->n);
  struct fsdp_catch refused;
  struct document_sink sink = {block_write, block_end, NULL, b};
  if (setjmp(refused.jump) != 0) {
    b->failure = strcpy(fsdp_xmalloc(strlen(refused.message) + 1), refused.message);
    return b;
  }
  fsdp_catch_set(&refused);
  jsonl_input_lines("input", c->path, r->files.jsonl_key, c->lines, c->n, c->first_line, &sink);
  fsdp_catch_set(NULL);
  return b;
}

static void *parser_main(void *arg) {
  struct document_reader *r = arg;
  for (struct chunk *c; (c = block_queue_pop(r->chunks));) {
    struct document_block *b = c->block;
    if (!b) {
      b = c->failure ? block_new(1) : parse(r, c);
      if (c->failure) b->failure = c->failure;
    }
    b->file_bytes += c->file_bytes;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping && c->seq >= r->next + r->window) pthread_cond_wait(&r->changed, &r->lock);
    if (r->stopping) {
      document_block_free(b);
    } else {
      r->blocks[c->seq % r->window] = b;
      pthread_cond_broadcast(&r->changed);
    }
    pthread_mutex_unlock(&r->lock);
    free(c->lines);
    free(c);
  }
  return NULL;
}

struct document_reader *document_reader_start(const struct document_files *files, int parsers, size_t ahead_bytes) {
  FSDP_CHECK(parsers >= 1);
  struct document_reader *r = fsdp_xcalloc(1, sizeof *r);
  r->files = *files;
  size_t unit = files->jsonl_key ? JSONL_CHUNK_BYTES : TEXT_BLOCK_BYTES;
  r->chunks = block_queue_create(parsers + 1);
  r->window = (long)(ahead_bytes / unit) + parsers + 2;
  r->blocks = fsdp_xcalloc((size_t)r->window, sizeof *r->blocks);
  r->total = -1;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->changed, NULL);
  if (pthread_create(&r->reader, NULL, reader_main, r) != 0) fsdp_fatal("cannot start a thread to read the input");
  r->parsers = fsdp_xcalloc((size_t)parsers, sizeof *r->parsers);
  for (; r->n_parsers < parsers; r->n_parsers++)
    if (pthread_create(&r->parsers[r->n_parsers], NULL, parser_main, r) != 0)
      fsdp_fatal("cannot start a thread to parse the input");
  return r;
}

struct document_block *document_reader_next(struct document_reader *r) {
  pthread_mutex_lock(&r->lock);
  struct document_block *b;
  while (!(b = r->blocks[r->next % r->window]) && r->next != r->total) pthread_cond_wait(&r->changed, &r->lock);
  if (b) {
    r->blocks[r->next % r->window] = NULL;
    r->next++;
    pthread_cond_broadcast(&r->changed);
  }
  pthread_mutex_unlock(&r->lock);
  if (b && b->failure) {
    document_reader_stop(r); /* the job ends from this thread alone */
    fsdp_fatal("%s", b->failure);
  }
  return b;
}

void document_reader_stop(struct document_reader *r) {
  pthread_mutex_lock(&r->lock);
  int stopped = r->stopping;
  r->stopping = 1;
  pthread_cond_broadcast(&r->changed);
  pthread_mutex_unlock(&r->lock);
  if (stopped) return;
  block_queue_abandon(r->chunks);
  pthread_t self = pthread_self();
  if (!pthread_equal(self, r->reader)) pthread_join(r->reader, NULL);
  for (int i = 0; i < r->n_parsers; i++)
    if (!pthread_equal(self, r->parsers[i])) pthread_join(r->parsers[i], NULL);
}

void document_reader_finish(struct document_reader *r) {
  pthread_join(r->reader, NULL);
  for (int i = 0; i < r->n_parsers; i++) pthread_join(r->parsers[i], NULL);
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->changed);
  free(r->parsers);
  free(r->blocks);
  block_queue_free(r->chunks);
  free(r);
}
