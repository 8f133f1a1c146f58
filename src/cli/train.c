#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "fsdp/comm.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/log.h"
#include "fsdp/nn.h"
#include "fsdp/stream.h"
#include "fsdp/timer.h"
#include "fsdp/trace.h"
#include "checkpoint.h"
#include "mfu.h"
#include "model_source.h"
#include "stop_signal.h"
#include "trainer.h"

/* torch.cuda.amp.GradScaler's dynamic loss scaling, for fp16 parameters. */
static const int LOSS_SCALE_GROWTH_INTERVAL = 2000;

/* Host memory apart from the device's: the pinned sharded state under --offload cpu
 * (and any staging buffers). Nothing apart when the device is the cpu itself. */
static void host_memory_stats(const struct trainer *t, struct mem_stats *out) {
  memset(out, 0, sizeof *out);
  if (t->device != device_cpu()) device_memory_stats(device_cpu(), out);
}

static void log_run(const struct trainer *t) {
  fsdp_log_info("model: %s, %d layers, %d heads, %d embd, vocab %d, %zu parameters in %d units",
                t->opt.model, t->opt.config.n_layer, t->opt.config.n_head, t->opt.config.n_embd, t->opt.config.vocab_size,
                fsdp_model_numel(&t->fsdp), t->fsdp.n_units);
  fsdp_log_info("fsdp: %d ranks on %s, sharding %s, batch %d x %d per rank x %d micro-batches (%d tokens per step)",
                t->world_size, device_name(t->device), sharding_strategy_name(t->opt.sharding), t->B, t->T, t->opt.grad_accum,
                t->B * t->T * t->world_size * t->opt.grad_accum);
  char isa[64];
  nn_cpu_isa(isa, sizeof isa);
  fsdp_log_info("cpu: %s, %d OpenMP threads a rank", isa, nn_num_threads());
  fsdp_log_info("flops: %.1f GFLOP a step (6 N + 12 L C T a token)", t->flops_per_step / 1e9);
  if (t->replicas > 1)
    fsdp_log_info("hsdp: mesh %d x %d: sharded within %d ranks, replicated across %d", t->replicas,
                  t->fsdp.world_size, t->fsdp.world_size, t->replicas);
  fsdp_log_info("memory: activation checkpointing %s, param dtype %s, reduce dtype %s, accumulation %s, "
                "sharded state %s",
                t->opt.ac_every == 0 ? "off" : t->opt.ac_every == 1 ? "of every block" : "of every k-th block",
                dtype_name(t->opt.mp.param_dtype), dtype_name(t->opt.mp.reduce_dtype),
                t->opt.accum_mode == ACCUM_NO_SYNC ? "no-sync" : "sharded",
                t->opt.offload_cpu ? "offloaded to pinned host memory" : "on the device");
  if (t->opt.overlap.blocking)
    fsdp_log_info("overlap: off (every collective waited for as soon as it is launched)");
  else
    fsdp_log_info("overlap: prefetch %d unit(s) ahead in forward, backward prefetch %s, at most %d units unsharded",
                  t->opt.overlap.prefetch, backward_prefetch_name(t->opt.overlap.backward_prefetch),
                  t->opt.overlap.max_unsharded);
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

void trainer_setup(struct trainer *t, const struct train_options *o, struct device *device, struct comm_group *group,
                   int planning) {
  memset(t, 0, sizeof *t);
  t->opt = *o;
  t->device = device;
  t->group = group;
  t->planning = planning;
  t->rank = comm_rank(group);
  t->world_size = comm_size(group);
  t->B = train_options_batch_per_rank(o, t->world_size);
  t->T = o->seq_len;
  const char *too_large = o->family->batch_problem(&o->config, t->B, t->T);
  if (too_large) fsdp_fatal("%s", too_large);
  int shard; /* --mesh is checked before the data is read */
  train_options_mesh(o, t->world_size, &t->replicas, &shard);

  if (!planning) data_loader_open(&t->data, o, t->T, t->B * t->world_size * o->grad_accum);

  if (t->replicas > 1) {
    comm_mesh_init(&t->mesh, group, t->replicas, shard);
    fsdp_model_init_hybrid(&t->fsdp, device, t->mesh.shard, t->mesh.replicate, o->sharding, &o->overlap, &o->mp);
  } else {
    fsdp_model_init(&t->fsdp, device, group, o->sharding, &o->overlap, &o->mp);
  }
  if (o->offload_cpu) fsdp_model_offload_to_cpu(&t->fsdp);
  t->model = o->family->create(&o->config, &t->fsdp, t->B, t->T, o->ac_every);
  fsdp_model_wrap(&t->fsdp, &o->wrap);
  t->scaler.scale = o->loss_scale;
  t->schedule = lr_warmup_cosine(o->lr, o->min_lr, o->warmup, o->steps);
  model_source_load(o, &t->fsdp);
  t->flops_per_step = mfu_flops_per_token(o, fsdp_model_numel(&t->fsdp)) * t->B * t->T * t->world_size * o->grad_accum;
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
  t->opt.family->forward(t->model, b->inputs, b->targets);
  event_record(b->read, t->fsdp.streams.compute);
}

/* The first --val-batches global batches of the validation windows, each rank its rows
 * of each as in training (forward_backward), so that every W reads the same windows. */
static double validation_loss(struct trainer *t) {
  int K = t->opt.grad_accum;
  for (int b = 0; b < t->opt.val_batches; b++)
    for (int k = 0; k < K; k++) {
      struct token_batch *batch = next_batch(t);
      data_loader_val_batch(&t->data, (uint64_t)b, (t->rank * K + k) * t->B, t->B, batch->inputs, batch->targets);
      forward(t, batch);
      t->opt.family->release_activations(t->model);
      fsdp_model_reshard_all(&t->fsdp);
    }
  return fsdp_model_mean_across_ranks(&t->fsdp, t->opt.family->take_loss(t->model));
}

/* Ranks start the trace together, so that their time zero is the same moment. */
static void start_trace(struct trainer *t) {
  comm_barrier(t->group);
  trace_clock_start();
  trace_enable(1);
}

static void finish_trace(struct trainer *t) {
  fsdp_model_synchronize(&t->fsdp); /* no stream may still be adding spans */
  trace_enable(0);
  trace_file_write(t->opt.trace_path, t->group);
  trace_clear();
  fsdp_log_info("trace of steps %d to %d written to %s", t->opt.trace_first, t->opt.trace_last, t->opt.trace_path);
}

/* K micro-batches: micro-batch k of rank r holds the global batch's rows from
 * (r K + k) B, so that the step sees the same rows as one batch of K B rows per rank
 * (data_loader.c: the global batch is the same at every W). */
static void forward_backward(struct trainer *t, int step) {
  const struct train_options *o = &t->opt;
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
    o->family->backward(t->model, loss_scale);
  }
}

/* GradScaler's update: an overflow (the norm of the scaled gradients is inf or nan
 * on some rank, which the all-reduce spreads to all) skips the step and halves the
 * scale; every LOSS_SCALE_GROWTH_INTERVAL good steps in a row double it. Returns 1
 * when the step is to be skipped. The norm is read to the host for it, as GradScaler's
 * step reads its found_inf: the one wait inside a step, and only in fp16. */
static int skip_on_overflow(struct trainer *t, int step) {
  struct loss_scaler *s = &t->scaler;
  if (s->scale == 0.0f) return 0;
  double norm = fsdp_model_measured_grad_norm(&t->fsdp);
  if (!isfinite(norm)) {
    fsdp_log_info("step %d: gradients overflowed in fp16 (grad norm %s): step skipped, loss scale %g -> %g", step,
                  isinf(norm) ? "inf" : "nan", s->scale, s->scale / 2);
    s->scale /= 2;
    s->good_steps = 0;
    fsdp_model_zero_grad(&t->fsdp);
    return 1;
  }
  if (++s->good_steps == LOSS_SCALE_GROWTH_INTERVAL) {
    s->scale *= 2;
    s->good_steps = 0;
  }
  return 0;
}

static long minor_faults_so_far(void) {
  struct rusage usage;
  return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_minflt : 0;
}

void trainer_step(struct trainer *t, int step, struct step_metrics *m) {
  const struct train_options *o = &t->opt;
  struct fsdp_comm_times comm;
  fsdp_model_take_comm_times(&t->fsdp, &comm); /* starts the step's count */
  long faults = minor_faults_so_far();
  double start = time_now_ms();
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
  double loss = o->family->take_loss(t->model);
  double norm = fsdp_model_measured_grad_norm(&t->fsdp) * unscale;
  double step_ms = time_now_ms() - start;
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
  m->grad_norm = norm;
  m->lr = lr;
  m->step_ms = step_ms;
  m->tokens_per_s = (double)t->B * t->T * t->world_size * o->grad_accum / (step_ms / 1000.0);
  m->data_ms = t->data_ms;
  t->data_ms = 0.0;
  m->gflops = t->flops_per_step / (step_ms * 1e6);
  m->mfu = t->peak_gflops > 0.0 ? m->gflops / t->peak_gflops : NAN;
  m->epoch = t->planning ? 0 : (long long)data_loader_epoch(&t->data, (uint64_t)(step - 1));
  int validate = !t->planning && t->data.has_val && o->val_every && (step % o->val_every == 0 || step == o->steps);
  m->val_loss = validate ? validation_loss(t) : NAN;
}

static void finish_snapshot(struct trainer *t) {
  mem_snapshot_stop();
  memory_snapshot_write(t->opt.snapshot_path, t->group, t->opt.snapshot_first, t->opt.snapshot_last);
  mem_snapshot_clear();
  fsdp_log_info("memory snapshot of steps %d to %d written to %s (draw it with fsdp memviz)",
                t->opt.snapshot_first, t->opt.snapshot_last, t->opt.snapshot_path);
}

void trainer_teardown(struct trainer *t) {
  if (t->log) fclose(t->log);
  for (int i = 0; i < 2; i++) {
    batch_free(t, t->batches[i].inputs);
    batch_free(t, t->batches[i].targets);
    event_destroy(t->batches[i].read);
  }
  t->opt.family->free(t->model);
  fsdp_model_free(&t->fsdp);
  if (t->replicas > 1) comm_mesh_free(&t->mesh);
  if (!t->planning) data_loader_free(&t->data);
}

/* After a step that a signal asked to be the last: its checkpoint, and the exit status
 * that says whether one was saved (stop_signal.h). */
static int stop(struct checkpointing *c, struct trainer *t, int step, int sig) {
  const char *name = stop_signal_name(sig);
  if (checkpointing_stop(c, t, step)) {
    fsdp_log_info("stopped by %s after step %d of %d: checkpoint step %d is complete, --resume auto continues from "
                  "it (exit status %d)",
                  name, step, t->opt.steps, step, FSDP_EXIT_STOPPED);
    return FSDP_EXIT_STOPPED;
  }
  if (t->rank == 0) {
    fprintf(stderr, "fsdp: stopped by %s after step %d of %d: nothing could be saved (no --checkpoint-dir); exit "
            "status %d\n", name, step, t->opt.steps, 128 + sig);
    fflush(stderr);
  }
  return 128 + sig;
}

int fsdp_train_main(int argc, char **argv) {
  /* Before MPI starts, so that a signal in the setup is not lost: it stops the job after
   * its first step. */
  stop_signal_install();
  comm_init(&argc, &argv);
  struct train_options o;
  if (train_options_parse(OPTIONS_TRAIN, &o, argc, argv)) {
    comm_finalize();
    return 0;
  }
  comm_set_timeout(o.comm_timeout);
  int rank = comm_rank(comm_world());
  if (o.trace_path && rank == 0) trace_file_check_writable(o.trace_path);
  if (o.snapshot_path && rank == 0) memory_snapshot_check_writable(o.snapshot_path);
  struct device *device = device_open(device_kind_parse(o.device), DEVICE_CPU);
  double peak = mfu_peak_gflops(&o, device, comm_world()) * comm_size(comm_world());
  struct trainer t;
  trainer_setup(&t, &o, device, comm_world(), 0);
  t.peak_gflops = peak;
  struct checkpointing checkpoints;
  int done = checkpointing_begin(&checkpoints, &t);
  t.log = rank == 0 ? metrics_open_log(o.log_path, done > 0) : NULL;
  int status = 0;
  for (int step = done + 1; step <= t.opt.steps; step++) {
    struct step_metrics m;
    if (t.opt.trace_path && step == t.opt.trace_first) start_trace(&t);
    if (t.opt.snapshot_path && step == t.opt.snapshot_first) mem_snapshot_start(device);
    mem_snapshot_set_step(step);
    trainer_step(&t, step, &m);
    if (t.opt.trace_path && step == t.opt.trace_last) finish_trace(&t);
    if (t.opt.snapshot_path && step == t.opt.snapshot_last) finish_snapshot(&t);
    metrics_report_step(t.log, t.opt.log_path, &m);
    if (step == done + 1) {
      metrics_print_memory("in the first step", &m.mem, 1);
      if (m.host_mem.total_peak) metrics_print_memory("of the host (pinned) in the first step", &m.host_mem, 1);
    }
    checkpointing_after_step(&checkpoints, &t, step);
    /* After the last step there is nothing left to stop: the run ends as it would have. */
    if (m.stop_signal && step < t.opt.steps) {
      status = stop(&checkpoints, &t, step, m.stop_signal);
      break;
    }
  }
  checkpointing_end(&checkpoints, &t);
  trainer_teardown(&t);
  device_close(device);
  /* Its barrier keeps every rank here until rank 0's metadata is durable: mpirun ends the
   * job's other processes once one exits with a status other than 0. */
  comm_finalize();
  return status;
}
