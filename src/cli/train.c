#include <math.h>
#include <stdio.h>

#include "fsdp/cli.h"
#include "fsdp/comm.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/timer.h"
#include "fsdp/trace.h"

/* Validation batches are drawn from their own index range so they never
 * coincide with the training batches' random streams. */
static const uint64_t VAL_BATCH_BASE = 1ull << 40;

struct trainer {
  struct train_options opt;
  struct comm_group *world;
  int rank, world_size, B, T;
  struct token_data data;
  struct token_split train, val;
  struct fsdp_model fsdp;
  struct gpt2 model;
  int *inputs, *targets;
  FILE *log;
};

static int per_rank_batch(const struct train_options *o, int world_size) {
  if (!o->global_batch_size) return o->batch_size;
  if (o->global_batch_size % world_size != 0)
    fsdp_fatal("--global-batch-size %d is not divisible by the world size %d", o->global_batch_size,
               world_size);
  return o->global_batch_size / world_size;
}

static void setup(struct trainer *t) {
  const struct train_options *o = &t->opt;
  t->world = comm_world();
  t->rank = comm_rank(t->world);
  t->world_size = comm_size(t->world);
  t->B = per_rank_batch(o, t->world_size);
  t->T = o->seq_len;
  const char *too_large = gpt2_batch_problem(&o->gpt2, t->B, t->T);
  if (too_large) fsdp_fatal("%s", too_large);

  token_data_load(&t->data, o->data, o->data_format, o->gpt2.vocab_size);
  token_data_split(&t->data, o->val_fraction, t->T, &t->train, &t->val);
  fsdp_log_info("data: %s, %zu tokens (%zu train, %zu val)", o->data, t->data.n_tokens, t->train.n_tokens,
                t->val.n_tokens);

  if (o->trace_path && t->rank == 0) trace_file_check_writable(o->trace_path);
  fsdp_model_init(&t->fsdp, t->world, o->sharding, &o->overlap);
  gpt2_create(&t->model, &o->gpt2, &t->fsdp, t->B, t->T);
  fsdp_model_init_params(&t->fsdp, o->seed);
  fsdp_log_info("model: %s, %d layers, %d heads, %d embd, vocab %d, %zu parameters in %d units",
                o->model, o->gpt2.n_layer, o->gpt2.n_head, o->gpt2.n_embd, o->gpt2.vocab_size,
                fsdp_model_numel(&t->fsdp), t->fsdp.n_units);
  fsdp_log_info("fsdp: %d ranks, sharding %s, batch %d x %d per rank (%d tokens per step)", t->world_size,
                sharding_strategy_name(o->sharding), t->B, t->T, t->B * t->T * t->world_size);
  if (o->overlap.blocking)
    fsdp_log_info("overlap: off (every collective waited for as soon as it is launched)");
  else
    fsdp_log_info("overlap: prefetch %d unit(s) ahead in forward, backward prefetch %s, at most %d units unsharded",
                  o->overlap.prefetch, backward_prefetch_name(o->overlap.backward_prefetch),
                  o->overlap.max_unsharded);
  struct mem_stats mem;
  mem_get_stats(&mem);
  metrics_print_memory("after model creation", &mem, 0);

  size_t N = (size_t)t->B * t->T;
  t->inputs = mem_alloc(N * sizeof(int), MEM_OTHER);
  t->targets = mem_alloc(N * sizeof(int), MEM_OTHER);
  t->log = t->rank == 0 ? metrics_open_log(o->log_path) : NULL;
}

static double validation_loss(struct trainer *t) {
  double sum = 0.0;
  for (int b = 0; b < t->opt.val_batches; b++) {
    token_split_batch(&t->val, t->opt.seed, VAL_BATCH_BASE + (uint64_t)b, t->rank * t->B, t->B, t->T, t->inputs,
                      t->targets);
    gpt2_forward(&t->model, t->inputs, t->targets);
    fsdp_model_reshard_all(&t->fsdp);
    sum += t->model.mean_loss;
  }
  return fsdp_model_mean_across_ranks(&t->fsdp, sum / t->opt.val_batches);
}

/* Ranks start the trace together, so that their time zero is the same moment. */
static void start_trace(struct trainer *t) {
  comm_barrier(t->world);
  trace_clock_start();
  trace_enable(1);
}

static void finish_trace(struct trainer *t) {
  fsdp_model_synchronize(&t->fsdp); /* no stream may still be adding spans */
  trace_enable(0);
  trace_file_write(t->opt.trace_path, t->world);
  trace_clear();
  fsdp_log_info("trace of steps %d to %d written to %s", t->opt.trace_first, t->opt.trace_last, t->opt.trace_path);
}

static void train_step(struct trainer *t, int step, struct step_metrics *m) {
  const struct train_options *o = &t->opt;
  struct fsdp_comm_times comm;
  fsdp_model_take_comm_times(&t->fsdp, &comm); /* starts the step's count */
  double start = time_now_ms();
  mem_reset_peaks();
  float lr = lr_warmup_cosine(step - 1, o->warmup, o->steps, o->lr, o->min_lr);
  token_split_batch(&t->train, o->seed, (uint64_t)(step - 1), t->rank * t->B, t->B, t->T, t->inputs, t->targets);
  gpt2_forward(&t->model, t->inputs, t->targets);
  gpt2_backward(&t->model);
  double norm = fsdp_model_grad_norm(&t->fsdp);
  fsdp_model_clip_grads(&t->fsdp, norm, o->grad_clip);
  struct adamw_config adamw = {lr, o->beta1, o->beta2, o->eps, o->weight_decay};
  fsdp_model_adamw_step(&t->fsdp, &adamw, step);
  double step_ms = time_now_ms() - start;
  fsdp_model_take_comm_times(&t->fsdp, &comm);

  mem_get_stats(&m->mem);
  m->loss = fsdp_model_mean_across_ranks(&t->fsdp, t->model.mean_loss);
  m->mem_peak_bytes = (size_t)fsdp_model_max_across_ranks(&t->fsdp, (double)m->mem.total_peak);
  m->comm_ms = comm.all_gather_ms + comm.reduce_scatter_ms;
  m->all_gather_ms = comm.all_gather_ms;
  m->reduce_scatter_ms = comm.reduce_scatter_ms;
  m->exposed_comm_ms = comm.exposed_ms;
  m->step = step;
  m->steps = o->steps;
  m->grad_norm = norm;
  m->lr = lr;
  m->step_ms = step_ms;
  m->tokens_per_s = (double)t->B * t->T * t->world_size / (step_ms / 1000.0);
  int validate = t->val.n_tokens && o->val_every && (step % o->val_every == 0 || step == o->steps);
  m->val_loss = validate ? validation_loss(t) : NAN;
}

static void teardown(struct trainer *t) {
  if (t->log) fclose(t->log);
  mem_free(t->inputs);
  mem_free(t->targets);
  gpt2_free(&t->model);
  fsdp_model_free(&t->fsdp);
  token_data_free(&t->data);
}

int fsdp_train_main(int argc, char **argv) {
  comm_init(&argc, &argv);
  struct trainer t = {0};
  if (train_options_parse(&t.opt, argc, argv)) {
    comm_finalize();
    return 0;
  }
  setup(&t);
  for (int step = 1; step <= t.opt.steps; step++) {
    struct step_metrics m;
    if (t.opt.trace_path && step == t.opt.trace_first) start_trace(&t);
    train_step(&t, step, &m);
    if (t.opt.trace_path && step == t.opt.trace_last) finish_trace(&t);
    metrics_report_step(t.log, t.opt.log_path, &m);
    if (step == 1) metrics_print_memory("in the first step", &m.mem, 1);
  }
  teardown(&t);
  comm_finalize();
  return 0;
}
