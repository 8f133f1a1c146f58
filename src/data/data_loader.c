/* The batches of a training run. A global batch is the next G windows of the training
 * order (data_order.c: epochs of shuffled shards and windows), G = --global-batch-size
 * (B W K): rank r's micro-batch k takes rows (r K + k) B to (r K + k + 1) B - 1 of it. So
 * the global batches are the same at any world size, mesh or --grad-accum, and a resumed
 * run (at any W) goes on with the very windows the uninterrupted one would have read,
 * across shards and epochs. Validation reads the first --val-batches global batches of
 * its windows in their order, every time. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/timer.h"
#include "fsdp/data.h"

static size_t windows_of(size_t n_tokens, int T) { return n_tokens > (size_t)T ? (n_tokens - 1) / (size_t)T : 0; }

static struct token_range range_of(int shard, size_t first, size_t n_tokens, int T) {
  return (struct token_range){shard, first, n_tokens, windows_of(n_tokens, T)};
}

static size_t count_windows(const struct token_range *r, int n) {
  size_t windows = 0;
  for (int i = 0; i < n; i++) windows += r[i].n_windows;
  return windows;
}

/* --data's tokens, its shards one after another: the last val_fraction of them (rounded
 * to nearest, so that 0.7 of 1000 tokens is 700 although 0.7f is a little below 0.7) are
 * the validation split, the rest the training split; a shard may be cut in two. */
static void split(const struct data_set *s, float val_fraction, int T, struct token_range **train, int *n_train,
                  struct token_range **val, int *n_val) {
  size_t n_val_tokens = (size_t)((double)val_fraction * (double)s->n_tokens + 0.5);
  size_t left = s->n_tokens - n_val_tokens;
  *train = fsdp_xcalloc((size_t)s->n_shards, sizeof **train);
  *val = fsdp_xcalloc((size_t)s->n_shards, sizeof **val);
  *n_train = *n_val = 0;
  for (int i = 0; i < s->n_shards; i++) {
    size_t n = s->shards[i].layout.n_tokens, in_train = n < left ? n : left;
    if (in_train) (*train)[(*n_train)++] = range_of(i, 0, in_train, T);
    if (n > in_train) (*val)[(*n_val)++] = range_of(i, in_train, n - in_train, T);
    left -= in_train;
  }
}

static size_t tokens_of(const struct token_range *r, int n) {
  size_t tokens = 0;
  for (int i = 0; i < n; i++) tokens += r[i].n_tokens;
  return tokens;
}

static void too_little(const char *what, const struct token_range *r, int n, int T, const char *remedy) {
  fsdp_fatal("too little data: the %s holds %zu tokens in %d range(s) of its shards, but one sequence of --seq-len %d "
             "needs %d within one shard; %s",
             what, tokens_of(r, n), n, T, T + 1, remedy);
}

static void open_source(struct window_source *w, const struct data_set *set, struct token_range *ranges, int n,
                        const struct data_loader *l, int shuffle) {
  data_order_init(&w->order, ranges, n, l->T, l->seed, shuffle);
  data_reader_init(&w->reader, set, data_io_parse(l->spec.io), l->vocab_size);
}

static const char *width_name(int width) { return width == 1 ? "bytes" : width == 2 ? "uint16" : "uint32"; }

/* The validation windows: --val-data's shards whole, or the tail ranges split off --data
 * (val, n_val: taken over). */
static void open_validation(struct data_loader *l, struct token_range *val, int n_val) {
  const struct data_spec *o = &l->spec;
  int T = l->T;
  if (o->val_files) {
    free(val);
    data_set_open(&l->val_set, "--val-data", o->val_files, o->format, o->tokenizer, l->vocab_size);
    if (l->val_set.width != l->train_set.width)
      fsdp_fatal("--val-data holds %d-byte tokens, --data %d-byte ones: they must be of one tokenizer's kind",
                 l->val_set.width, l->train_set.width);
    const struct data_shard *in_train, *shared = data_set_shared(&l->val_set, &l->train_set, &in_train);
    if (shared)
      fsdp_log_info("data: warning: --val-data's '%s' is --data's '%s' too: the validation loss is measured on "
                    "windows the model trains on",
                    shared->path, in_train->path);
    n_val = l->val_set.n_shards;
    val = fsdp_xcalloc((size_t)n_val, sizeof *val);
    for (int i = 0; i < n_val; i++) val[i] = range_of(i, 0, l->val_set.shards[i].layout.n_tokens, T);
    if (count_windows(val, n_val) == 0) too_little("--val-data", val, n_val, T, "lower --seq-len, or use more data");
  } else if (o->val_fraction > 0.0f && count_windows(val, n_val) == 0) {
    too_little("validation split", val, n_val, T,
               "lower --seq-len, raise --val-fraction (0 turns validation off), or use more data");
  }
  l->val_windows = count_windows(val, n_val);
  l->has_val = l->val_windows > 0;
  size_t needed = (size_t)o->val_batches * (size_t)l->G;
  if (l->has_val && o->val_every > 0 && needed > l->val_windows)
    fsdp_fatal("--val-batches %d: %d global batches of %d windows need %zu windows, but the validation %s holds %zu "
               "of --seq-len %d; lower --val-batches, or give more validation data",
               o->val_batches, o->val_batches, l->G, needed,
               o->val_files ? "data (--val-data)" : "split (--val-fraction)", l->val_windows, T);
  if (!l->has_val) {
    free(val);
    return;
  }
  open_source(&l->val, o->val_files ? &l->val_set : &l->train_set, val, n_val, l, 0);
  fsdp_log_info("data: validation: %zu windows (%s), the first %d global batch(es) of them read at each validation",
                l->val_windows, o->val_files ? "--val-data" : "the tail of --data, --val-fraction", o->val_batches);
}

void data_loader_open(struct data_loader *l, const struct data_spec *spec, int vocab_size, uint64_t seed, int T,
                      int G) {
  memset(l, 0, sizeof *l);
  FSDP_CHECK(T > 0 && G > 0);
  l->spec = *spec;
  l->vocab_size = vocab_size;
  l->seed = seed;
  l->T = T;
  l->G = G;
  const struct data_spec *o = spec;
  double began = time_now_ms();
  data_set_open(&l->train_set, "--data", o->files, o->format, o->tokenizer, vocab_size);
  struct token_range *train, *val;
  int n_train, n_val;
  split(&l->train_set, o->val_files ? 0.0f : o->val_fraction, T, &train, &n_train, &val, &n_val);
  if (count_windows(train, n_train) == 0)
    too_little("training split", train, n_train, T, "lower --seq-len or --val-fraction, or use more data");
  open_source(&l->train, &l->train_set, train, n_train, l, 1);
  const struct data_set *s = &l->train_set;
  fsdp_log_info("data: %d shard(s) of %s (%s), %zu tokens: %zu in training, %llu windows of %d + 1 tokens an epoch "
                "(%s ... %s), read with %s; opened in %.0f ms",
                s->n_shards, width_name(s->width), o->tokenizer ? "tokenized" : "streamed", s->n_tokens,
                tokens_of(train, n_train), (unsigned long long)l->train.order.windows_per_epoch, T, s->shards[0].name,
                s->shards[s->n_shards - 1].name, o->io, time_now_ms() - began);
  open_validation(l, val, n_val);
}

static void read_rows(struct window_source *w, uint64_t u, int count, int T, int *inputs, int *targets) {
  for (int j = 0; j < count; j++) {
    struct window_place p = data_order_place(&w->order, u + (uint64_t)j);
    const struct token_range *r = &w->order.ranges[p.range];
    data_reader_window(&w->reader, r->shard, r->first + p.window * (size_t)T, T, inputs + (size_t)j * T,
                       targets + (size_t)j * T);
  }
}

static uint64_t first_window(const struct data_loader *l, uint64_t b) {
  FSDP_CHECK(b >= l->origin_batch);
  return l->origin_window + (b - l->origin_batch) * (uint64_t)l->G;
}

void data_loader_train_batch(struct data_loader *l, uint64_t b, int first, int count, int *inputs, int *targets) {
  FSDP_CHECK(first >= 0 && count >= 0 && first + count <= l->G);
  read_rows(&l->train, first_window(l, b) + (uint64_t)first, count, l->T, inputs, targets);
}

void data_loader_val_batch(struct data_loader *l, uint64_t b, int first, int count, int *inputs, int *targets) {
  FSDP_CHECK(l->has_val && first >= 0 && count >= 0 && first + count <= l->G);
  read_rows(&l->val, b * (uint64_t)l->G + (uint64_t)first, count, l->T, inputs, targets);
}

struct data_position data_loader_position(const struct data_loader *l, uint64_t b) {
  uint64_t u = first_window(l, b), E = l->train.order.windows_per_epoch;
  return (struct data_position){u / E, u % E};
}

uint64_t data_loader_epoch(const struct data_loader *l, uint64_t b) {
  return data_loader_position(l, b).epoch;
}

int data_loader_seek(struct data_loader *l, uint64_t b, struct data_position p) {
  if (p.epoch_window >= l->train.order.windows_per_epoch) p = (struct data_position){p.epoch + 1, 0};
  if (p.epoch >= data_order_epochs(&l->train.order)) return -1;
  l->origin_batch = b;
  l->origin_window = p.epoch * l->train.order.windows_per_epoch + p.epoch_window;
  return 0;
}

void data_loader_describe(struct data_loader *l, struct data_position p, const char **shard_name,
                          size_t *shard_window) {
  struct window_place w = data_order_place(&l->train.order, p.epoch * l->train.order.windows_per_epoch + p.epoch_window);
  const struct token_range *r = &l->train.order.ranges[w.range];
  *shard_name = l->train_set.shards[r->shard].name;
  *shard_window = w.window; /* a training range starts at its shard's first token */
}

const struct data_shard *data_loader_shard_at(const struct data_loader *l, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) return NULL;
  const struct data_set *sets[] = {&l->train_set, &l->val_set};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < sets[k]->n_shards; i++) {
      const struct data_shard *shard = &sets[k]->shards[i];
      if (shard->inode == (uint64_t)st.st_ino && shard->device == (uint64_t)st.st_dev) return shard;
    }
  return NULL;
}

void data_loader_free(struct data_loader *l) {
  data_order_free(&l->train.order);
  data_reader_free(&l->train.reader);
  if (l->has_val) {
    data_order_free(&l->val.order);
    data_reader_free(&l->val.reader);
  }
  data_set_free(&l->train_set);
  if (l->val_set.shards) data_set_free(&l->val_set);
  memset(l, 0, sizeof *l);
}
