/* `fsdp eval`'s run (train.h, evaluate): the mean cross-entropy of a model over fixed
 * windows of its data's shards, every window in order or the first `batches` B of them, the
 * same whatever the world size, so that it can be compared with transformers'. The shards
 * are streamed as training's are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/timer.h"
#include "fsdp/train.h"

enum { PROGRESS_EVERY_MS = 5000 };

struct eval_run {
  struct data_set set;
  struct window_source windows;
  struct source_model m;
  int rank, W, B, T;
  int *inputs, *targets;
  size_t n_windows; /* evaluated */
  double began_ms, shown_ms;
};

/* Windows [first, first + count) of the order into rows, the rest of B rows copies of
 * window 0 (the padding of a last batch). */
static void load_rows(struct eval_run *e, size_t first, int count) {
  for (int j = 0; j < e->B; j++) {
    uint64_t u = j < count ? (uint64_t)(first + (size_t)j) : 0;
    struct window_place p = data_order_place(&e->windows.order, u);
    const struct token_range *r = &e->windows.order.ranges[p.range];
    data_reader_window(&e->windows.reader, r->shard, r->first + p.window * (size_t)e->T, e->T,
                       e->inputs + (size_t)j * e->T, e->targets + (size_t)j * e->T);
  }
}

/* A forward of the rows loaded; take_loss gives the mean over those since the last take. */
static void forward(struct eval_run *e) {
  e->m.family->forward(e->m.model, e->inputs, e->targets);
  e->m.family->release_activations(e->m.model);
  fsdp_model_reshard_all(&e->m.fsdp);
}

static void show_progress(struct eval_run *e, int done, int total) {
  double now = time_now_ms();
  if (e->rank != 0 || now - e->shown_ms < PROGRESS_EVERY_MS) return;
  e->shown_ms = now;
  double seconds = (now - e->began_ms) / 1000.0;
  fprintf(stderr, "eval: %d of %d global batches (%.1f%%), %.0f tokens/s\n", done, total, 100.0 * done / total,
          (double)done * e->B * e->W * e->T / seconds);
  fflush(stderr);
}

/* Global batch j is B W windows, rank r's the r-th B of them. A last batch with fewer
 * (rem) gives each rank its share (c of B rows real) padded with window 0; the padding's
 * loss is taken out exactly as a forward of B copies of window 0 measures it (rows are
 * independent sequences), since every rank must run as many forwards as the others. */
static double token_loss_sum(struct eval_run *e) {
  size_t per_batch = (size_t)e->B * e->W, n_full = e->n_windows / per_batch, rem = e->n_windows % per_batch;
  int total = (int)(n_full + (rem > 0));
  double sum = 0.0, tokens_per_forward = (double)e->B * e->T;
  for (size_t j = 0; j < n_full; j++) {
    load_rows(e, j * per_batch + (size_t)e->rank * e->B, e->B);
    forward(e);
    show_progress(e, (int)j + 1, total);
  }
  if (n_full) sum += e->m.family->take_loss(e->m.model) * tokens_per_forward * (double)n_full;
  if (rem) {
    size_t mine = (size_t)e->rank * e->B;
    int count = rem > mine ? (int)(rem - mine < (size_t)e->B ? rem - mine : (size_t)e->B) : 0;
    load_rows(e, n_full * per_batch + mine, count);
    forward(e);
    double padded = e->m.family->take_loss(e->m.model) * tokens_per_forward;
    load_rows(e, 0, 0);
    forward(e);
    double pad_row = e->m.family->take_loss(e->m.model) * e->T;
    if (count) sum += padded - (double)(e->B - count) * pad_row;
  }
  return sum;
}

struct evaluation evaluate(const struct train_config *c, int batches) {
  struct eval_run e;
  memset(&e, 0, sizeof e);
  const struct model_spec *spec = &c->model;
  const struct data_spec *data = &c->data;
  struct comm_group *world = comm_world();
  e.rank = comm_rank(world);
  e.W = comm_size(world);
  e.B = c->batch_size;
  e.T = c->seq_len;
  const char *too_large = spec->family->batch_problem(&spec->config, e.B, e.T);
  if (too_large) fsdp_fatal("%s", too_large);
  data_set_open(&e.set, "--data", data->files, data->format, data->tokenizer, spec->config.vocab_size);
  struct token_range *ranges = fsdp_xcalloc((size_t)e.set.n_shards, sizeof *ranges);
  size_t all = 0;
  for (int i = 0; i < e.set.n_shards; i++) {
    size_t n = e.set.shards[i].layout.n_tokens;
    ranges[i] = (struct token_range){i, 0, n, n > (size_t)e.T ? (n - 1) / (size_t)e.T : 0};
    all += ranges[i].n_windows;
  }
  if (all == 0)
    fsdp_fatal("--data %s: %zu tokens in %d shard(s), but one window of --seq-len %d needs %d within one shard",
               data->files, e.set.n_tokens, e.set.n_shards, e.T, e.T + 1);
  e.n_windows = batches ? (size_t)batches * (size_t)e.B : all;
  if (e.n_windows > all)
    fsdp_fatal("--data %s: %zu windows of %d tokens, but --batches %d of %d windows need %zu", data->files, all,
               e.T + 1, batches, e.B, e.n_windows);
  data_order_init(&e.windows.order, ranges, e.set.n_shards, e.T, c->seed, 0);
  data_reader_init(&e.windows.reader, &e.set, data_io_parse(data->io), spec->config.vocab_size);

  source_model_open(&e.m, spec, c->seed, world, e.B, e.T, &c->mp);
  if (e.m.source) fsdp_log_info("parameters: from %s", e.m.source);
  fsdp_log_info("eval: %zu windows of %d + 1 tokens in %d shard(s), %d global batch(es) of %d x %d", e.n_windows, e.T,
                e.set.n_shards, (int)((e.n_windows + (size_t)e.B * e.W - 1) / ((size_t)e.B * e.W)), e.W, e.B);
  e.inputs = fsdp_xcalloc((size_t)e.B * e.T, sizeof(int));
  e.targets = fsdp_xcalloc((size_t)e.B * e.T, sizeof(int));
  e.began_ms = e.shown_ms = time_now_ms();
  double sum = token_loss_sum(&e);
  struct evaluation result = {fsdp_model_mean_across_ranks(&e.m.fsdp, sum) * e.W / ((double)e.n_windows * e.T),
                              e.n_windows};
  free(e.inputs);
  free(e.targets);
  source_model_close(&e.m);
  data_order_free(&e.windows.order);
  data_reader_free(&e.windows.reader);
  data_set_free(&e.set);
  return result;
}
