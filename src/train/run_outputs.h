/* Private to src/train: what a run writes besides its checkpoints: each step's console
 * line and JSON line (metrics.c), the Chrome trace of --trace-steps (trace_file.c) and the
 * memory snapshot of --snapshot-steps (memory_snapshot_file.c). */
#ifndef FSDP_TRAIN_RUN_OUTPUTS_H
#define FSDP_TRAIN_RUN_OUTPUTS_H

#include <stdio.h>

#include "fsdp/memory.h"

/* ---- metrics.c: what one training step reports: a console line, and a JSON line in the
 * --log file ---- */

struct step_metrics {
  int step, steps;
  int world_size;
  const char *setup;         /* train_config_setup_text's: what shapes the step's time */
  int threads_per_rank;      /* on the cpu, each rank's OpenMP threads; else 0 */
  double loss, grad_norm, lr, step_ms, tokens_per_s;
  double data_ms;            /* this rank's time reading the step's windows (data_loader.c), within step_ms */
  double gflops, mfu;        /* the step's model FLOPs (all ranks) per second, over the peak (NAN: unknown) */
  /* comm_ms: the all-gather, reduce-scatter and (HSDP) replicate streams' busy time,
   * added up; exposed_comm_ms: the compute thread's time blocked waiting for them. */
  double comm_ms, all_gather_ms, reduce_scatter_ms, replicate_ms, exposed_comm_ms;
  int validated;             /* whether val_loss was measured this step (it may be NaN) */
  double val_loss;
  double loss_scale;         /* fp16: the dynamic loss scale the step ran with; else 0 */
  long minor_faults;         /* this rank's page faults in the step (getrusage) */
  int skipped;               /* fp16: the gradients overflowed and no update was made */
  long long epoch;           /* the epoch of the step's first window, from 0 (0 without data) */
  size_t mem_peak_bytes;     /* the largest peak of any rank */
  int stop_signal;           /* a signal that asked the job to stop, on any rank (0: none) */
  struct mem_stats mem;      /* this rank's, by category */
  /* This rank's host memory apart from the device's (the pinned sharded state under
   * --offload cpu); all zero when the device is the cpu itself. */
  struct mem_stats host_mem;
};

/* Opens the JSON-lines log for writing, or for appending (a run given --resume); NULL path: no
 * log. A failure names the file. */
FILE *metrics_open_log(const char *path, int append);
void metrics_report_step(FILE *log, const char *log_path, const struct step_metrics *m);
/* One console line: current (or peak) bytes per category. */
void metrics_print_memory(const char *when, const struct mem_stats *s, int peak);

struct comm_group;

/* ---- trace_file.c: --trace ---- */

/* On rank 0 before training: ends the job now, with the reason, when the trace could not
 * be written there later. */
void trace_file_check_writable(const char *path);
/* Collective over the group: every rank's recorded events (include/fsdp/trace.h) go
 * into one Chrome trace JSON file on rank 0, one process per rank and one thread per
 * track, written to a temporary name and renamed. Call it with recording off and every
 * stream idle; the events are left in place. A failure ends the job naming --trace. */
void trace_file_write(const char *path, struct comm_group *group);

/* ---- memory_snapshot_file.c: --memory-snapshot ---- */

/* On rank 0 before training, as trace_file_check_writable. */
void memory_snapshot_check_writable(const char *path);
/* Collective, as trace_file_write: every rank's recorded memory events
 * (mem_snapshot_events) of steps first..last go into one JSON file on rank 0
 * (docs/architecture.md, "Memory snapshots"), which `fsdp memviz` draws. */
void memory_snapshot_write(const char *path, struct comm_group *group, int first_step, int last_step);

#endif
