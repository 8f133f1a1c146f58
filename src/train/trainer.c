/* The trainer (trainer.h): a model made, sharded and filled on a device over a group, and
 * its steps: K micro-batches forward and backward, the gradient norm, clipping and AdamW,
 * and what the step reports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/meta_clock.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/timer.h"
#include "mfu.h"
#include "model_source.h"
#include "trainer.h"

/* Host memory apart from the device's: the pinned sharded state under --offload cpu
 * (and any staging buffers). Nothing apart when the device is the cpu itself. */
static void host_memory_stats(const struct trainer *t, struct mem_stats *out) {
  memset(out, 0, sizeof *out);
  if (t->device != device_cpu()) device_memory_stats(device_cpu(), out);
}

static void log_run(const struct trainer *t) {
  const struct train_config *c = &t->cfg;
  const struct model_config *m = &c->model.config;
  fsdp_log_info("model: %s, %d layers, %d heads, %d embd, vocab %d, %zu parameters in %d units", c->model.name,
                m->n_layer, m->n_head, m->n_embd, m->vocab_size, fsdp_model_numel(&t->fsdp), t->fsdp.n_units);
  fsdp_log_info("fsdp: %d ranks on %s, sharding %s, batch %d x %d per rank x %d micro-batches (%d tokens per step)",
                t->world_size, device_name(t->device), sharding_strategy_name(c->model.sharding), t->B, t->T,
                c->grad_accum, t->B * t->T * t->world_size * c->grad_accum);
  char isa[64], engines[160];
  nn_cpu_isa(isa, sizeof isa);
  nn_cpu_engines(nn_compute_dtype(device_cpu(), c->mp.param_dtype), engines, sizeof engines);
  fsdp_log_info("cpu: %s, %d OpenMP threads a rank; %s", isa, nn_num_threads(), engines);
  fsdp_log_info("flops: %.1f GFLOP a step (6 N + 12 L C T a token)", t->flops_per_step / 1e9);
  if (t->replicas > 1)
    fsdp_log_info("hsdp: mesh %d x %d: sharded within %d ranks, replicated across %d", t->replicas,
                  t->fsdp.world_size, t->fsdp.world_size, t->replicas);
  char ac[48] = "off";
  if (c->ac_every == 1) snprintf(ac, sizeof ac, "of every block");
  else if (c->ac_every) snprintf(ac, sizeof ac, "of one block in %d", c->ac_every);
  fsdp_log_info("memory: activation checkpointing %s, param dtype %s, reduce dtype %s, accumulation %s, "
                "sharded state %s",
                ac,
                dtype_name(c->mp.param_dtype), dtype_name(c->mp.reduce_dtype),
                c->accum_mode == ACCUM_NO_SYNC ? "no-sync" : "sharded",
                c->offload_cpu ? "offloaded to pinned host memory" : "on the device");
  if (c->overlap.blocking)
    fsdp_log_info("overlap: off (every collective waited for as soon as it is launched)");
  else
    fsdp_log_info("overlap: prefetch %d unit(s) ahead in forward, backward prefetch %s, at most %d units unsharded",
                  c->overlap.prefetch, backward_prefetch_name(c->overlap.backward_prefetch), c->overlap.max_unsharded);
  struct mem_stats mem;
  device_memory_stats(t->device, &mem);
  metrics_print_memory("after model creation", &mem, 0);
  host_memory_stats(t, &mem);
  if (mem.total_current) metrics_print_memory("of the host (pinned) after model creation", &mem, 0);
}

/* A batch's token ids on the host. For cuda in pinned memory, whose copies to the device
 * are asynchronous: a copy from pageable memory first waits for the stream's work, a
 * wait inside every step. */
static int *batch_alloc(const struct trainer *t) {
  size_t bytes = (size_t)t->B * t->T * sizeof(int);
  if (device_target(t->device) == DEVICE_CUDA) return device_alloc_pinned(t->device, bytes, MEM_OTHER);
  return fsdp_xcalloc(1, bytes);
}

static void batch_free(const struct trainer *t, int *tokens) {
  if (device_target(t->device) == DEVICE_CUDA)
    device_free_pinned(t->device, tokens);
  else
    free(tokens);
}

void trainer_setup(struct trainer *t, const struct train_config *o, struct device *device, struct comm_group *group,
                   int planning) {
  memset(t, 0, sizeof *t);
  t->cfg = *o;
  t->device = device;
  t->group = group;
  t->planning = planning;
  t->rank = comm_rank(group);
  t->world_size = comm_size(group);
  t->B = train_config_batch_per_rank(o, t->world_size);
  t->T = o->seq_len;
  const struct model_spec *spec = &o->model;
  const char *too_large = spec->family->batch_problem(&spec->config, t->B, t->T);
  if (too_large) fsdp_fatal("%s", too_large);
  int shard; /* --mesh is checked before the data is read */
  train_config_mesh(o, t->world_size, &t->replicas, &shard);
  train_config_setup_text(o, t->world_size, t->setup);

  if (!planning)
    data_loader_open(&t->data, &o->data, spec->config.vocab_size, o->seed, t->T, t->B * t->world_size * o->grad_accum);

  if (t->replicas > 1) {
    comm_mesh_init(&t->mesh, group, t->replicas, shard);
    fsdp_model_init_hybrid(&t->fsdp, device, t->mesh.shard, t->mesh.replicate, spec->sharding, &o->overlap, &o->mp);
  } else {
    fsdp_model_init(&t->fsdp, device, group, spec->sharding, &o->overlap, &o->mp);
  }
  if (o->offload_cpu) fsdp_model_offload_to_cpu(&t->fsdp);
  t->model = spec->family->create(&spec->config, &t->fsdp, t->B, t->T, o->ac_every);
  fsdp_model_wrap(&t->fsdp, &o->wrap);
  t->scaler.scale = o->loss_scale;
  t->schedule = lr_warmup_cosine(o->lr, o->min_lr, o->warmup, o->steps);
  const char *source = model_source_fill(spec, o->seed, &t->fsdp);
  if (source) fsdp_log_info("parameters: from %s", source);
  t->flops_per_step = mfu_flops_per_token(&spec->config, t->T, fsdp_model_numel(&t->fsdp)) * t->B * t->T *
                      t->world_size * o->grad_accum;
  if (!planning) log_run(t);

  for (int i = 0; i < 2; i++) {
    struct token_batch *b = &t->batches[i];
    b->inputs = batch_alloc(t);
    b->targets = batch_alloc(t);
    b->read = event_create(t->device);
  }
}

/* The batch to fill next: the one whose forward was launched longest ago, once that
 * forward's copy of it has run (a wait only when the device is two forwards behind). */
static struct token_batch *next_batch(struct trainer *t) {
  struct token_batch *b = &t->batches[t->next_batch];
  t->next_batch ^= 1;
  event_synchronize(b->read);
  return b;
}

/* The forward of a batch the loader filled. */
static void forward(struct trainer *t, struct token_batch *b) {
  t->cfg.model.family->forward(t->model, b->inputs, b->targets);
  event_record(b->read, t->fsdp.streams.compute);
}

/* The first --val-batches global batches of the validation windows, each rank its rows
 * of each as in training (forward_backward), so that every W reads the same windows. */
static double validation_loss(struct trainer *t) {
  int K = t->cfg.grad_accum;
  for (int b = 0; b < t->cfg.data.val_batches; b++)
    for (int k = 0; k < K; k++) {
      struct token_batch *batch = next_batch(t);
      data_loader_val_batch(&t->data, (uint64_t)b, (t->rank * K + k) * t->B, t->B, batch->inputs, batch->targets);
      forward(t, batch);
      t->cfg.model.family->release_activations(t->model);
      fsdp_model_reshard_all(&t->fsdp);
    }
  return fsdp_model_mean_across_ranks(&t->fsdp, t->cfg.model.family->take_loss(t->model));
}

/* K micro-batches: micro-batch k of rank r holds the global batch's rows from
 * (r K + k) B, so that the step sees the same rows as one batch of K B rows per rank
 * (data_loader.c: the global batch is the same at every W). */
static void forward_backward(struct trainer *t, int step) {
  const struct train_config *o = &t->cfg;
  int K = o->grad_accum;
  float loss_scale = (t->scaler.scale > 0.0f ? t->scaler.scale : 1.0f) / (float)K;
  for (int k = 0; k < K; k++) {
    struct token_batch *batch = next_batch(t);
    if (!t->planning) {
      double began = time_now_ms();
      data_loader_train_batch(&t->data, (uint64_t)(step - 1), (t->rank * K + k) * t->B, t->B, batch->inputs,
                              batch->targets);
      t->data_ms += time_now_ms() - began;
    }
    t->fsdp.requires_grad_sync = o->accum_mode == ACCUM_SHARDED || k == K - 1;
    forward(t, batch);
    o->model.family->backward(t->model, loss_scale);
  }
}

/* A step whose fp16 gradients overflowed is skipped (loss_scaler.h), its gradients dropped. */
static int skip_on_overflow(struct trainer *t, int step) {
  if (t->scaler.scale == 0.0f) return 0;
  if (!loss_scaler_update(&t->scaler, fsdp_model_measured_grad_norm(&t->fsdp), step)) return 0;
  fsdp_model_zero_grad(&t->fsdp);
  return 1;
}

static long minor_faults_so_far(void) {
  struct rusage usage;
  return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_minflt : 0;
}

/* A planned step's time is the meta device's clock (fsdp/meta_clock.h). */
static double step_clock_ms(const struct trainer *t) { return t->planning ? meta_clock_now() * 1e3 : time_now_ms(); }

void trainer_step(struct trainer *t, int step, struct step_metrics *m) {
  const struct train_config *o = &t->cfg;
  struct fsdp_comm_times comm;
  fsdp_model_take_comm_times(&t->fsdp, &comm); /* starts the step's count */
  long faults = minor_faults_so_far();
  double start = step_clock_ms(t);
  device_reset_peaks(t->device);
  if (t->device != device_cpu()) device_reset_peaks(device_cpu());
  float lr = lr_at(&t->schedule, step - 1);
  m->loss_scale = t->scaler.scale;
  float unscale = t->scaler.scale > 0.0f ? 1.0f / t->scaler.scale : 1.0f;
  forward_backward(t, step);
  fsdp_model_measure_grad_norm(&t->fsdp);
  m->skipped = skip_on_overflow(t, step);
  if (!m->skipped) {
    fsdp_model_clip_grad_norm(&t->fsdp, o->grad_clip, unscale);
    struct adamw_config adamw = {lr, o->beta1, o->beta2, o->eps, o->weight_decay};
    fsdp_model_adamw_step(&t->fsdp, &adamw, ++t->optimizer_steps);
  }
  /* The step's wait for the device: its loss and its norm, once the optimizer is launched. */
  double loss = o->model.family->take_loss(t->model);
  double norm = fsdp_model_measured_grad_norm(&t->fsdp) * unscale;
  double step_ms = step_clock_ms(t) - start;
  m->minor_faults = minor_faults_so_far() - faults;
  fsdp_model_take_comm_times(&t->fsdp, &comm);

  device_memory_stats(t->device, &m->mem);
  host_memory_stats(t, &m->host_mem);
  m->loss = fsdp_model_mean_across_ranks(&t->fsdp, loss);
  /* A stop signal on any rank rides on the peak's all-reduce: every rank learns of it
   * after the same step, with no collective of its own. */
  double maxima[2] = {(double)m->mem.total_peak, t->planning ? 0.0 : (double)stop_signal_received()};
  fsdp_model_max_across_ranks_n(&t->fsdp, maxima, 2);
  m->mem_peak_bytes = (size_t)maxima[0];
  m->stop_signal = (int)maxima[1];
  m->comm_ms = comm.all_gather_ms + comm.reduce_scatter_ms + comm.replicate_ms;
  m->replicate_ms = comm.replicate_ms;
  m->all_gather_ms = comm.all_gather_ms;
  m->reduce_scatter_ms = comm.reduce_scatter_ms;
  m->exposed_comm_ms = comm.exposed_ms;
  m->step = step;
  m->steps = o->steps;
  m->world_size = t->world_size;
  m->setup = t->setup;
  m->threads_per_rank = t->device == device_cpu() ? nn_num_threads() : 0;
  m->grad_norm = norm;
  m->lr = lr;
  m->step_ms = step_ms;
  m->tokens_per_s = (double)t->B * t->T * t->world_size * o->grad_accum / (step_ms / 1000.0);
  m->data_ms = t->data_ms;
  t->data_ms = 0.0;
  m->gflops = t->flops_per_step / (step_ms * 1e6);
  m->mfu = t->peak_gflops > 0.0 ? m->gflops / t->peak_gflops : NAN;
  m->epoch = t->planning ? 0 : (long long)data_loader_epoch(&t->data, (uint64_t)(step - 1));
  int validate =
      !t->planning && t->data.has_val && o->data.val_every && (step % o->data.val_every == 0 || step == o->steps);
  m->validated = validate;
  m->val_loss = validate ? validation_loss(t) : NAN;
}

void trainer_teardown(struct trainer *t) {
  for (int i = 0; i < 2; i++) {
    batch_free(t, t->batches[i].inputs);
    batch_free(t, t->batches[i].targets);
    event_destroy(t->batches[i].read);
  }
  t->cfg.model.family->free(t->model);
  fsdp_model_free(&t->fsdp);
  if (t->replicas > 1) comm_mesh_free(&t->mesh);
  if (!t->planning) data_loader_free(&t->data);
}

