/* The train layer (src/train): a training run on any device, from its configuration to
 * its last checkpoint: the trainer's set-up and step (trainer.c), the loop that steps it
 * and writes its log, traces, snapshots and checkpoints (train_run.c), where a model's
 * parameters come from (model_source.c), an evaluation of fixed windows (evaluation.c),
 * and a step planned on the meta device (step_plan.c). It sits on every layer below,
 * data included; the fsdp command fills its configurations from flags. */
#ifndef FSDP_TRAIN_H
#define FSDP_TRAIN_H

#include <stddef.h>
#include <stdint.h>

#include "fsdp/comm.h"
#include "fsdp/data.h"
#include "fsdp/memory.h"
#include "fsdp/meta_clock.h"
#include "fsdp/model.h"
#include "fsdp/runtime.h"

/* A model: its family and shape, where its parameters come from, and where and how it
 * computes. */
struct model_spec {
  const char *name;                  /* the preset's, or the source its shape was read from */
  const struct model_family *family; /* the preset's */
  struct model_config config;        /* the preset's, then overridden by --n-layer etc. */
  const char *init_from;             /* Hugging Face safetensors the parameters start from, or NULL */
  const char *checkpoint;            /* eval, export, sample: a training checkpoint's step directory, or NULL */
  const char *device;                /* cpu or cuda */
  enum sharding_strategy sharding;
};

/* HSDP's mesh: shard within groups of `shard` consecutive ranks, replicate across
 * `replicate` of them (R S = W); 0, 0: (1, W). */
struct mesh_shape {
  int replicate, shard;
};

/* Steps first..last (from 1) of a run that an output covers. */
struct step_range {
  int first, last;
};

/* Gradient accumulation over micro-batches: reduce-scatter each one and add into the
 * sharded gradient, or keep the unsharded gradients and reduce once at the end. */
enum accum_mode { ACCUM_SHARDED, ACCUM_NO_SYNC };
/* "sharded", "no-sync" by value, then NULL. */
extern const char *const ACCUM_MODE_NAMES[];

/* A training run: `fsdp train` fills it from its flags, `fsdp plan` too (the data left
 * unread); eval, export and sample take its model, batch, precision and data. */
struct train_config {
  struct model_spec model;
  int seq_len;                 /* T */
  int batch_size;              /* sequences per rank per micro-batch (B) */
  int global_batch_size;       /* 0, or sequences per step over all ranks and micro-batches */
  int grad_accum;              /* micro-batches per step (K) */
  enum accum_mode accum_mode;
  int steps;
  uint64_t seed;               /* of the initial weights and of the batches */
  float lr, min_lr, weight_decay, grad_clip, beta1, beta2, eps;
  int warmup;
  struct data_spec data;
  struct fsdp_wrap_policy wrap;
  struct fsdp_overlap overlap;
  struct mesh_shape mesh;
  float comm_timeout;          /* seconds a collective may take before the watchdog ends the job */
  int ac_every;                /* 0 none, 1 every block, K every K-th */
  struct fsdp_mixed_precision mp;
  float loss_scale;            /* fp16: the initial dynamic loss scale; else 0 */
  int offload_cpu;             /* cuda only: the sharded state in pinned host memory */
  const char *log_path;        /* JSON lines, one a step; or NULL */
  float peak_gflops;           /* a rank's peak for the MFU; 0: measured (cpu) or the card's (cuda) */
  const char *trace_path;      /* a Chrome trace of trace_steps, or NULL */
  struct step_range trace_steps;
  const char *snapshot_path;   /* a memory snapshot of snapshot_steps, or NULL */
  struct step_range snapshot_steps;
  const char *checkpoint_dir;  /* NULL: no checkpoints are written */
  int checkpoint_every;        /* steps between checkpoints; 0: only after the last step */
  int keep_last;               /* complete checkpoints kept; 0: all */
  const char *resume;          /* NULL, "auto" (newest complete in checkpoint_dir) or a checkpoint directory */
  int data_changed;            /* resume on another data set than the checkpoint's (--data-changed accept) */
};

/* --mesh resolved for world_size ranks: (1, W) when not given; ends the job, naming
 * --mesh, when R·S is not world_size. */
void train_config_mesh(const struct train_config *c, int world_size, int *replicate, int *shard);
/* B: --batch-size, or --global-batch-size / (world_size * --grad-accum), which must divide. */
int train_config_batch_per_rank(const struct train_config *c, int world_size);
/* What shapes a step's time at world_size beyond its tokens and FLOPs, as the flags that
 * set it ("--device cpu --param-dtype bf16 ... --offload none"): the log's "setup", which
 * `fsdp plan --calibrate` compares with the plan's. */
enum { TRAIN_SETUP_TEXT_MAX = 512 }; /* its bytes, the NUL's among them */
void train_config_setup_text(const struct train_config *c, int world_size, char out[TRAIN_SETUP_TEXT_MAX]);

/* ---- train_run.c: `fsdp train` ---- */

/* The exit status of a run stopped by a signal once its checkpoint is complete: sysexits'
 * EX_TEMPFAIL ("try again"): `--resume auto` continues it. Stopped without
 * --checkpoint-dir, nothing is saved and the status is 128 + the signal, as a shell
 * reports a process the signal ended. */
enum { FSDP_EXIT_STOPPED = 75 };

/* The signals that ask a run to stop (preemption, a time limit, a user's Ctrl-C): SIGTERM,
 * SIGINT and SIGUSR1 (stop_signal.c). The handler only records the first one; the run
 * reads it at the step's metric all-reduce, so that every rank stops after the same step,
 * writes a checkpoint and exits FSDP_EXIT_STOPPED (docs/architecture.md, "Preemption"). A
 * second signal takes its default action at once. Installed before MPI starts, so that a
 * signal during the set-up is not lost (SA_RESTART). */
void stop_signal_install(void);
/* The first of the signals received since stop_signal_install, or 0. */
int stop_signal_received(void);
/* "SIGTERM", "SIGINT", "SIGUSR1" (or "another signal"). */
const char *stop_signal_name(int sig);

/* The whole run over the MPI world (comm_init done): the model made, sharded and filled,
 * its checkpoint resumed, every step logged, checkpoints written. Returns the exit status:
 * 0, or FSDP_EXIT_STOPPED (or 128 + the signal) after a stop signal. */
int train_run(const struct train_config *c);

/* ---- model_source.c: the model of eval, export and sample ---- */

/* A model of spec's family and shape on its device, sharded over group with its strategy,
 * wrapped per module, for batches of B x T, its parameters from spec's checkpoint, its
 * init_from safetensors, or a fresh initialisation from seed. */
struct source_model {
  struct device *device;
  struct fsdp_model fsdp;
  const struct model_family *family;
  void *model;
  const char *source; /* the path read, or NULL for a fresh initialisation */
};
void source_model_open(struct source_model *m, const struct model_spec *spec, uint64_t seed,
                       struct comm_group *group, int B, int T, const struct fsdp_mixed_precision *mp);
void source_model_close(struct source_model *m);
/* The family and shape of the model a checkpoint holds (its metadata.json's "model"). */
const struct model_family *checkpoint_model_read(const char *step_dir, struct model_config *c);

/* ---- evaluation.c: `fsdp eval` ---- */

/* The mean cross-entropy of c's model over fixed windows of c's data (window i of a shard:
 * its tokens i T to i T + T, as training reads them), every window in order or the first
 * `batches` B of them, the same whatever the world size. Collective over the MPI world. */
struct evaluation {
  double loss;
  size_t windows;
};
struct evaluation evaluate(const struct train_config *c, int batches);

/* ---- plan_machine.c: what `fsdp plan` times a step on ---- */

enum { PLAN_NAME_MAX = 96 };

/* The share of a peak each class of work reaches: the products (matmul), the attention's,
 * the ops that stream their operands (memory, of the memory's bandwidth) and the rings (link,
 * of the links' line rate). */
struct plan_efficiency {
  double matmul, attention, memory, link;
};

/* A rank's device and links. Peaks are a GPU's datasheet figures, or what the probes read
 * on this machine's CPU; the rates charged are peaks times efficiencies, times the scales
 * --calibrate fits (1 without). */
struct plan_machine {
  char name[PLAN_NAME_MAX];       /* "h100-sxm", or this machine's cpu */
  double peak_flops;              /* a rank's: dense bf16 on a GPU; the probed product rate on the CPU */
  double memory_bytes_per_s;      /* HBM's, or the CPU's probed */
  double capacity_bytes;          /* the memory a rank's device has (0: unknown, the CPU's) */
  double host_link_bytes_per_s;   /* copies between the host and the device */
  double host_memory_bytes_per_s; /* the host's, for an optimizer offloaded to it */
  double launch_s, op_s;          /* struct device_speed's */
  int cpu_cores, threads_per_rank; /* the CPU's, whose ranks share its cores; 0 on a GPU */
  struct plan_efficiency efficiency;
  struct comm_links links;        /* line rates; ranks_per_node consecutive ranks a machine */
  char intra_name[PLAN_NAME_MAX], inter_name[PLAN_NAME_MAX]; /* their presets, or the figures given */
  double compute_scale, intra_scale;
};
/* A GPU by name, with figures after it that change the preset's: NAME[,memory=SIZE]
 * [,hbm=RATE][,host=RATE] (--gpu); its links are its platform's, a NIC a GPU. */
void plan_machine_gpu(struct plan_machine *m, const char *spec);
/* The preset of a GPU by the product name cudaGetDeviceProperties gives, or NULL. */
const char *plan_gpu_of(const char *model);
/* This machine's CPU, its ranks of nn_num_threads() threads each: the product rate
 * peak.c probes (and caches) for the compute dtype and a streaming add's bandwidth, which
 * the ranks of a machine share where their threads outnumber the cores; links loopback
 * within it and ethernet-25g between machines, one NIC a machine. */
void plan_machine_cpu(struct plan_machine *m, enum dtype compute_dtype);
/* intra=LINK or inter=LINK, LINK a preset or RATE[,LATENCY] (--link; latency 5us when not
 * given). Bad input ends the job naming the flag. */
void plan_machine_link(struct plan_machine *m, const char *spec);
/* CLASS=FRACTION,... (--efficiency). */
void plan_machine_efficiency(struct plan_machine *m, const char *spec);
/* The rates the meta devices charge (the planned device's and, under --offload cpu, the
 * host's) and the links the meta groups' rings run over. */
void plan_machine_speed(const struct plan_machine *m, struct device_speed *device, struct device_speed *host,
                        struct comm_links *links);

/* ---- step_plan.c: `fsdp plan` ---- */

/* A planned step's time, as `fsdp train` logs a step's (fsdp/meta_clock.h's model). */
struct step_time {
  double step_ms, tokens_per_s, mfu; /* mfu: of the machine's peak */
  double all_gather_ms, reduce_scatter_ms, replicate_ms; /* the comm streams' busy time */
  double exposed_ms;                 /* the compute stream's waits for them */
  struct meta_clock_reading clock;   /* the step's tallies: each op's time, each wait's */
};

/* Two steps of the very training `fsdp train` runs, on the meta device over a meta group
 * of world_size ranks: every allocation made and counted, no byte touched, each launch
 * charged what it takes on machine. The second step's (it starts
 * with what the first one's optimizer prefetched, as every later step). */
struct step_plan {
  struct mem_stats mem;  /* the device's, per rank */
  struct mem_stats host; /* the host's pinned memory apart from the device's (--offload cpu) */
  struct comm_traffic traffic, replicate_traffic; /* within the shard group, across the replicas */
  size_t numel;
  int n_units, B;
  struct step_time time;
};
void plan_step(const struct train_config *c, int world_size, const struct plan_machine *machine,
               struct step_plan *out);

/* ---- plan_calibrate.c: `fsdp plan --calibrate` ---- */

/* Fits m to a run of c logged by `fsdp train --log`: its median step after the first two,
 * planned at its world size on m, takes the log's time outside the exposed communication
 * (compute_scale), and exposes as much communication as the log's (intra_scale for a run
 * on one machine; for a run across machines, the latency of a ring step between them).
 * Logs fitted one after another (a run on one machine, then one across) each keep what
 * the one before fitted but compute_scale. Says what it read and fitted on stderr. Bad
 * input ends the job naming the file. */
void plan_calibrate(const struct train_config *c, struct plan_machine *m, const char *log_path);

#endif
