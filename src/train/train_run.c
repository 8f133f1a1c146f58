/* A training run from start to end (train.h): the trainer set up over the MPI world, the
 * checkpoint resumed, then each step taken, logged, traced and snapshotted where asked,
 * and checkpointed when due; a stop signal ends the run after the same step on every
 * rank, with a checkpoint. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "checkpointing.h"
#include "fsdp/comm.h"
#include "fsdp/data.h"
#include "fsdp/device.h"
#include "fsdp/error.h"
#include "fsdp/hf.h"
#include "fsdp/input_file.h"
#include "fsdp/log.h"
#include "fsdp/memory.h"
#include "fsdp/trace.h"
#include "mfu.h"
#include "trainer.h"

/* Ranks start the trace together, so that their time zero is the same moment. */
static void start_trace(struct trainer *t) {
  comm_barrier(t->group);
  trace_clock_start();
  trace_enable(1);
}

static void finish_trace(struct trainer *t) {
  const struct train_config *c = &t->cfg;
  fsdp_model_synchronize(&t->fsdp); /* no stream may still be adding spans */
  trace_enable(0);
  trace_file_write(c->trace_path, t->group);
  trace_clear();
  fsdp_log_info("trace of steps %d to %d written to %s", c->trace_steps.first, c->trace_steps.last, c->trace_path);
}

static void finish_snapshot(struct trainer *t) {
  const struct train_config *c = &t->cfg;
  mem_snapshot_stop();
  memory_snapshot_write(c->snapshot_path, t->group, c->snapshot_steps.first, c->snapshot_steps.last);
  mem_snapshot_clear();
  fsdp_log_info("memory snapshot of steps %d to %d written to %s (draw it with fsdp memviz)", c->snapshot_steps.first,
                c->snapshot_steps.last, c->snapshot_path);
}

/* After a step that a signal asked to be the last: its checkpoint, and the exit status
 * that says whether one was saved. */
static int stop(struct checkpointing *c, struct trainer *t, int step, int sig) {
  const char *name = stop_signal_name(sig);
  if (checkpointing_stop(c, step)) {
    fsdp_log_info("stopped by %s after step %d of %d: checkpoint step %d is complete, --resume auto continues from "
                  "it (exit status %d)",
                  name, step, t->cfg.steps, step, FSDP_EXIT_STOPPED);
    return FSDP_EXIT_STOPPED;
  }
  if (t->rank == 0) {
    fprintf(stderr, "fsdp: stopped by %s after step %d of %d: nothing could be saved (no --checkpoint-dir); exit "
            "status %d\n", name, step, t->cfg.steps, 128 + sig);
    fflush(stderr);
  }
  return 128 + sig;
}

/* What the run writes must not be a file it reads: --log opened over a token file
 * truncated it, --trace replaced the weights of --init-from, a log appended to a
 * checkpoint's rank file ruined it; nor one another output writes too. */
static void check_outputs(const struct trainer *t) {
  const struct train_config *c = &t->cfg;
  const char *const flags[] = {"--log", "--trace", "--memory-snapshot"};
  const char *const paths[] = {c->log_path, c->trace_path, c->snapshot_path};
  for (int i = 0; i < 3; i++) {
    const char *p = paths[i];
    if (!p) continue;
    const struct data_shard *shard = data_loader_shard_at(&t->data, p);
    if (shard)
      fsdp_fatal("%s: '%s' is the token file '%s' that the run reads: writing it would destroy the data", flags[i], p,
                 shard->path);
    for (int j = 0; j < i; j++)
      if (paths[j] && (strcmp(paths[j], p) == 0 || input_file_same(paths[j], p)))
        fsdp_fatal("%s: '%s' is %s's file too: each output needs its own", flags[i], p, flags[j]);
    if (c->data.tokenizer && input_file_same(c->data.tokenizer, p))
      fsdp_fatal("%s: '%s' is the --tokenizer file that the run reads", flags[i], p);
    char folder[4096], metadata[4200];
    input_file_folder(p, folder, sizeof folder);
    const char *init = c->model.init_from, *slash = strrchr(p, '/'), *name = slash ? slash + 1 : p;
    if (init && (input_file_same(init, p) || (input_file_same(init, folder) && hf_folder_reads(name))))
      fsdp_fatal("%s: '%s' is one of --init-from's files ('%s'), which the run reads", flags[i], p, init);
    snprintf(metadata, sizeof metadata, "%s/%s", folder, CKPT_METADATA);
    if (access(metadata, F_OK) == 0)
      fsdp_fatal("%s: '%s' is in the checkpoint folder '%s', whose files a checkpoint is made of", flags[i], p,
                 folder);
  }
}

int train_run(const struct train_config *c) {
  comm_set_timeout(c->comm_timeout);
  struct comm_group *world = comm_world();
  int rank = comm_rank(world);
  if (c->trace_path && rank == 0) trace_file_check_writable(c->trace_path);
  if (c->snapshot_path && rank == 0) memory_snapshot_check_writable(c->snapshot_path);
  struct device *device = device_open(device_kind_parse(c->model.device), DEVICE_CPU);
  double peak = peak_gflops(c->peak_gflops, c->mp.param_dtype, device, world) * comm_size(world);
  struct trainer t;
  trainer_setup(&t, c, device, world, 0);
  check_outputs(&t);
  t.peak_gflops = peak;
  struct ckpt_parts parts = {&t.cfg, t.world_size, t.B, &t.fsdp, &t.data, &t.schedule, &t.optimizer_steps, &t.scaler};
  struct checkpointing checkpoints;
  int done = checkpointing_begin(&checkpoints, &parts, world);
  /* A run asked to resume appends, even where it found nothing to resume from (a
   * mistyped --checkpoint-dir): the log of the run it meant to continue is kept. */
  FILE *log = rank == 0 ? metrics_open_log(c->log_path, done > 0 || c->resume) : NULL;
  int status = 0;
  for (int step = done + 1; step <= c->steps; step++) {
    struct step_metrics m;
    if (c->trace_path && step == c->trace_steps.first) start_trace(&t);
    if (c->snapshot_path && step == c->snapshot_steps.first) mem_snapshot_start(device);
    mem_snapshot_set_step(step);
    trainer_step(&t, step, &m);
    if (c->trace_path && step == c->trace_steps.last) finish_trace(&t);
    if (c->snapshot_path && step == c->snapshot_steps.last) finish_snapshot(&t);
    metrics_report_step(log, c->log_path, &m);
    /* Without fp16's loss scaling no step skips gradients that are not finite: AdamW has
     * made the parameters and moments NaN, and every later step would train on nothing. */
    if (!m.skipped && !isfinite(m.grad_norm))
      fsdp_fatal("step %d: the gradients' norm is %s: training diverged, and the parameters are no longer finite "
                 "(lower --lr or raise --warmup; a checkpoint before this step holds finite ones)",
                 step, isnan(m.grad_norm) ? "NaN" : "infinite");
    if (step == done + 1) {
      metrics_print_memory("in the first step", &m.mem, 1);
      if (m.host_mem.total_peak) metrics_print_memory("of the host (pinned) in the first step", &m.host_mem, 1);
    }
    checkpointing_after_step(&checkpoints, step);
    /* After the last step there is nothing left to stop: the run ends as it would have. */
    if (m.stop_signal && step < c->steps) {
      status = stop(&checkpoints, &t, step, m.stop_signal);
      break;
    }
  }
  checkpointing_end(&checkpoints);
  if (log) fclose(log);
  trainer_teardown(&t);
  device_close(device);
  return status;
}
